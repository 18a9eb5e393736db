// SPDX-License-Identifier: Apache-2.0
// RmaOp: put and get slices.
#include "ucp/proto/rma_op.h"

#include <cassert>

#include "ucp/core/request_alloc.h"

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

Status RmaOp::issue(size_t lane, const Slice& s, uct::Completion* comp) {
  const size_t ep_lane = params_.lanes[lane];
  const LaneRuntime& lr = (*ep_lanes_)[ep_lane];
  const SliceCall call = slice_call(params_.op, params_.kind, lr.attr, s.length);
  const uct::MemHandle* memh = nullptr;
  if (call == SliceCall::Zcopy) {
    MC_ASSIGN_OR_RETURN(memh, regs_.for_lane(ep_lane));
  }
  return post_slice(params_.op, call, lr, static_cast<uint8_t*>(params_.buffer) + s.offset,
                    s.length, params_.remote_addr + s.offset, *params_.rkey->for_lane(ep_lane),
                    memh, comp);
}

void RmaOp::completed(size_t lane, const Slice& s) {
  (*ep_lanes_)[params_.lanes[lane]].rma_done_bytes += s.length;
}

void PostedSliceOp::Slot::reset() {
  comp.count = 1;
  comp.status = Status::Ok;
  fired = false;
  lane = nullptr;
  length = 0;
}

std::unique_ptr<PostedSliceOp::Slot> PostedSliceOp::SlotCache::take() {
  if (!spare_.empty()) {
    std::unique_ptr<Slot> slot = std::move(spare_.back());
    spare_.pop_back();
    return slot;
  }
  auto slot = std::make_unique<Slot>();
  slot->comp.func = [](uct::Completion* c) {
    auto* s = static_cast<Slot*>(c->arg);
    s->fired = true;
    if (s->lane) s->lane->rma_done_bytes += s->length;
  };
  slot->comp.arg = slot.get();
  return slot;
}

void* PostedSliceOp::operator new(size_t size) {
  assert(size == sizeof(PostedSliceOp));
  (void)size;
  return RequestAllocator<PostedSliceOp>().allocate(1);
}

void PostedSliceOp::operator delete(void* p) {
  RequestAllocator<PostedSliceOp>().deallocate(static_cast<PostedSliceOp*>(p), 1);
}

void PostedSliceOp::SlotCache::give(std::unique_ptr<Slot> slot) {
  if (spare_.size() < kMaxSpare) spare_.push_back(std::move(slot));
}

Status PostedSliceOp::progress() {
  if (general_) return general_->progress();
  if (!slot_) return status_;
  if (!slot_->fired) return Status::InProgress;
  // Fired: the transport is done with the slot.
  status_ = slot_->comp.status;
  if (status_ != Status::Ok && !aborted_) general_ = retry_(*slot_);
  cache_->give(std::move(slot_));
  return general_ ? general_->progress() : status_;
}

void PostedSliceOp::abort() {
  aborted_ = true;
  if (general_) general_->abort();
}

size_t PostedSliceOp::in_flight() const {
  if (orphaned_) return 0;
  return (slot_ && !slot_->fired ? 1 : 0) + (general_ ? general_->in_flight() : 0);
}

void PostedSliceOp::orphan() {
  orphaned_ = true;
  if (general_) general_->orphan();
}

}  // namespace mc::ucp::proto
