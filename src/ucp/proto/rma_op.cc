// SPDX-License-Identifier: Apache-2.0
// RmaOp: put and get slices.
#include "ucp/proto/rma_op.h"

#include <cstring>

namespace mc::ucp::proto {

using ucs::Result;
using ucs::Status;

RmaOp::RmaOp(const std::vector<LaneRuntime>* ep_lanes, RmaParams params)
    : ep_lanes_(ep_lanes),
      params_(std::move(params)),
      regs_(ep_lanes, params_.buffer, params_.length, params_.memh),
      executor_(std::move(params_.slices), std::move(params_.exec), this) {}

Status RmaOp::lane_status(size_t lane) const {
  const size_t ep_lane = params_.lanes[lane];
  const Status s = (*ep_lanes_)[ep_lane].status;
  if (is_error(s)) return s;
  if (!params_.rkey->for_lane(ep_lane)) return Status::Unreachable;  // no key for its md
  return Status::Ok;
}

namespace {

struct PackArg {
  const uint8_t* src;
  size_t length;
};

size_t pack_slice(void* dest, void* arg) {
  auto* a = static_cast<PackArg*>(arg);
  if (a->length) std::memcpy(dest, a->src, a->length);
  return a->length;
}

// The destination pointer travels as the argument: it stays valid for the
// whole request.
void unpack_slice(void* arg, const void* data, size_t length) {
  if (length) std::memcpy(arg, data, length);
}

}  // namespace

Status RmaOp::issue(size_t lane, const Slice& s, uct::Completion* comp) {
  const Status st = issue_on(lane, s, comp);
  const LaneRuntime& lr = (*ep_lanes_)[params_.lanes[lane]];
  if (st == Status::Ok && params_.op == Op::Put) lr.local_completions = true;
  if (st == Status::Ok || st == Status::InProgress) lr.rma_bytes += s.length;
  return st;
}

Status RmaOp::issue_on(size_t lane, const Slice& s, uct::Completion* comp) {
  const size_t ep_lane = params_.lanes[lane];
  const LaneRuntime& lr = (*ep_lanes_)[ep_lane];
  const uct::Rkey& rkey = *params_.rkey->for_lane(ep_lane);
  const bool put = params_.op == Op::Put;
  const uct::OpLimits& lim = put ? lr.attr.put : lr.attr.get;
  const uint64_t cap = lr.attr.cap;
  const bool has_bcopy = cap & (put ? uct::kCapPutBcopy : uct::kCapGetBcopy);
  const bool has_zcopy = cap & (put ? uct::kCapPutZcopy : uct::kCapGetZcopy);
  const bool copy_kind = params_.kind == ProtoKind::Short || params_.kind == ProtoKind::Bcopy;
  if (put && params_.kind == ProtoKind::Short && (cap & uct::kCapPutShort) &&
      s.length <= lim.max_short) {
    return lr.ep->put_short(static_cast<uint8_t*>(params_.buffer) + s.offset, s.length,
                            params_.remote_addr + s.offset, rkey);
  }
  if (copy_kind && has_bcopy && s.length <= lim.max_bcopy) {
    return issue_bcopy(ep_lane, s, rkey, comp);
  }
  if (has_zcopy && s.length <= lim.max_zcopy && s.length > 0) {
    return issue_zcopy(ep_lane, s, rkey, comp);
  }
  if (has_bcopy && s.length <= lim.max_bcopy) return issue_bcopy(ep_lane, s, rkey, comp);
  return Status::Unsupported;
}

Status RmaOp::issue_bcopy(size_t ep_lane, const Slice& s, const uct::Rkey& rkey,
                          uct::Completion* comp) {
  const LaneRuntime& lr = (*ep_lanes_)[ep_lane];
  uint8_t* local = static_cast<uint8_t*>(params_.buffer) + s.offset;
  const uint64_t raddr = params_.remote_addr + s.offset;
  if (params_.op == Op::Get)
    return lr.ep->get_bcopy(unpack_slice, local, s.length, raddr, rkey, comp);
  PackArg arg{local, s.length};
  Result<size_t> r = lr.ep->put_bcopy(pack_slice, &arg, raddr, rkey);
  if (!r.ok()) return r.status();
  return *r == s.length ? Status::Ok : Status::IoError;
}

Status RmaOp::issue_zcopy(size_t ep_lane, const Slice& s, const uct::Rkey& rkey,
                          uct::Completion* comp) {
  const LaneRuntime& lr = (*ep_lanes_)[ep_lane];
  MC_ASSIGN_OR_RETURN(const uct::MemHandle* memh, regs_.for_lane(ep_lane));
  uct::Iov iov{static_cast<uint8_t*>(params_.buffer) + s.offset, s.length, memh};
  const uint64_t raddr = params_.remote_addr + s.offset;
  return params_.op == Op::Put ? lr.ep->put_zcopy(&iov, 1, raddr, rkey, comp)
                               : lr.ep->get_zcopy(&iov, 1, raddr, rkey, comp);
}

void PostedSliceOp::Slot::reset() {
  comp.count = 1;
  comp.status = Status::Ok;
  fired = false;
}

std::unique_ptr<PostedSliceOp::Slot> PostedSliceOp::make_slot() {
  auto slot = std::make_unique<Slot>();
  slot->comp.func = [](uct::Completion* c) { static_cast<Slot*>(c->arg)->fired = true; };
  slot->comp.arg = slot.get();
  return slot;
}

Status PostedSliceOp::progress() {
  if (general_) return general_->progress();
  if (!slot_->fired) return Status::InProgress;
  if (slot_->comp.status == Status::Ok || aborted_) return slot_->comp.status;
  general_ = retry_();
  return general_->progress();
}

void PostedSliceOp::abort() {
  aborted_ = true;
  if (general_) general_->abort();
}

size_t PostedSliceOp::in_flight() const {
  if (orphaned_) return 0;
  return (slot_->fired ? 0 : 1) + (general_ ? general_->in_flight() : 0);
}

void PostedSliceOp::orphan() {
  orphaned_ = true;
  if (general_) general_->orphan();
}

}  // namespace mc::ucp::proto
