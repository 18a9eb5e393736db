// SPDX-License-Identifier: Apache-2.0
// AmOp: UCP active messages over UCT active messages.
#include "ucp/proto/am_op.h"

#include <algorithm>
#include <cstring>

#include "ucs/datastruct/wire.h"

namespace mc::ucp::proto {

using ucs::Result;
using ucs::Status;

size_t am_fragment_capacity(const LaneRuntime& lane, ProtoKind kind, bool whole) {
  const uct::IfaceAttr& a = lane.attr;
  const size_t hdr = whole ? kAmSingleHeader : kAmFragHeader;
  size_t cap = 0;
  if ((a.cap & uct::kCapAmBcopy) && a.am.max_bcopy > hdr) cap = a.am.max_bcopy - hdr;
  // Some transports count the header in max_zcopy: leave room for it.
  const bool zcopy = (a.cap & uct::kCapAmZcopy) && a.am.max_hdr >= hdr && a.am.max_zcopy > hdr;
  if (zcopy && (kind == ProtoKind::Zcopy || kind == ProtoKind::MultiZcopy || cap == 0)) {
    cap = std::max(cap, a.am.max_zcopy - hdr);
  }
  if (whole && kind == ProtoKind::Short && (a.cap & uct::kCapAmShort) && a.am.max_short > hdr) {
    cap = std::max(cap, a.am.max_short - hdr);
  }
  return cap;
}

AmOp::AmOp(const std::vector<LaneRuntime>* ep_lanes, AmParams params)
    : ep_lanes_(ep_lanes),
      params_(std::move(params)),
      regs_(ep_lanes, const_cast<void*>(params_.buffer), params_.length, params_.memh),
      executor_(params_.slices, std::move(params_.exec), this) {
  if (params_.order) params_.order->push_back(this);
}

ucs::Status AmOp::progress() {
  const Status s = executor_.progress();
  if (s != Status::InProgress || !executor_.waiting()) leave_order();
  return s;
}

void AmOp::leave_order() {
  if (!params_.order) return;
  std::erase(*params_.order, this);
  params_.order = nullptr;
}

Status AmOp::lane_status(size_t lane) const {
  return (*ep_lanes_)[params_.lanes[lane]].status;
}

const AmOp::Header& AmOp::header(const Slice& s, bool whole) {
  Header& h = headers_[s.offset];
  std::vector<uint8_t> bytes;
  ucs::WireWriter w(&bytes);
  w.u16(params_.am_id);
  w.u16(0);
  w.u32(0);
  if (!whole) {
    w.u64(params_.sender_uuid);
    w.u64(params_.message_id);
    w.u64(params_.length);
    w.u64(s.offset);
  }
  std::memcpy(h.data(), bytes.data(), bytes.size());
  return h;
}

namespace {

struct PackArg {
  const uint8_t* header;
  size_t header_length;
  const uint8_t* payload;
  size_t length;
};

size_t pack_am(void* dest, void* arg) {
  auto* a = static_cast<PackArg*>(arg);
  auto* d = static_cast<uint8_t*>(dest);
  std::memcpy(d, a->header, a->header_length);
  if (a->length) std::memcpy(d + a->header_length, a->payload, a->length);
  return a->header_length + a->length;
}

}  // namespace

Status AmOp::issue(size_t lane, const Slice& s, uct::Completion* comp) {
  // An earlier message of the endpoint still waits for room: this one
  // waits behind it.
  if (params_.order && params_.order->front() != this) return Status::NoResource;
  const Status st = issue_on(lane, s, comp);
  if (st == Status::Ok) (*ep_lanes_)[params_.lanes[lane]].local_completions = true;
  return st;
}

Status AmOp::issue_on(size_t lane, const Slice& s, uct::Completion* comp) {
  const size_t ep_lane = params_.lanes[lane];
  const LaneRuntime& lr = (*ep_lanes_)[ep_lane];
  const uct::IfaceAttr& a = lr.attr;
  const bool whole = params_.slices.size() == 1;
  const uint8_t id = whole ? kAmIdSingle : kAmIdFrag;
  const size_t hdr_len = whole ? kAmSingleHeader : kAmFragHeader;
  const uint8_t* payload = static_cast<const uint8_t*>(params_.buffer) + s.offset;
  if (whole && params_.kind == ProtoKind::Short && am_short_fits(lr, s.length)) {
    return am_short_whole(lr, params_.am_id, payload, s.length);
  }
  const Header& h = header(s, whole);  // bcopy and zcopy carry it as bytes
  const bool zero_copy_kind =
      params_.kind == ProtoKind::Zcopy || params_.kind == ProtoKind::MultiZcopy;
  const bool bcopy_fits = (a.cap & uct::kCapAmBcopy) && s.length + hdr_len <= a.am.max_bcopy;
  const bool zcopy_fits = (a.cap & uct::kCapAmZcopy) && hdr_len <= a.am.max_hdr &&
                          s.length + hdr_len <= a.am.max_zcopy && s.length > 0;
  if (bcopy_fits && (!zero_copy_kind || !zcopy_fits)) {
    PackArg arg{h.data(), hdr_len, payload, s.length};
    Result<size_t> r = lr.ep->am_bcopy(id, pack_am, &arg);
    return r.ok() ? Status::Ok : r.status();
  }
  if (zcopy_fits) {
    MC_ASSIGN_OR_RETURN(const uct::MemHandle* memh, regs_.for_lane(ep_lane));
    uct::Iov iov{const_cast<uint8_t*>(payload), s.length, memh};
    return lr.ep->am_zcopy(id, h.data(), hdr_len, &iov, 1, comp);
  }
  return Status::Unsupported;
}

}  // namespace mc::ucp::proto
