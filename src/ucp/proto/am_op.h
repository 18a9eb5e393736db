// SPDX-License-Identifier: Apache-2.0
// AmOp: an eager active message, whole or in fragments over one or more lanes.
#pragma once

#include <array>
#include <deque>
#include <map>
#include <vector>

#include "ucp/proto/am_wire.h"
#include "ucp/proto/lane_runtime.h"
#include "ucp/proto/proto_select.h"
#include "ucp/proto/request_op.h"
#include "ucp/proto/slice_executor.h"

namespace mc::ucp::proto {

class AmOp;

/// An endpoint's active messages that have slices not yet posted, oldest
/// first. Only the oldest may post: a message never passes an earlier one
/// that waits for room on a lane.
using AmOrder = std::deque<const AmOp*>;

/// What one active message carries and how.
struct AmParams {
  uint16_t am_id = 0;  ///< the receiver's handler id
  const void* buffer = nullptr;
  size_t length = 0;
  ProtoKind kind = ProtoKind::Bcopy;
  uint64_t sender_uuid = 0;   ///< identifies the sender's fragments
  uint64_t message_id = 0;    ///< unique per sender
  std::vector<size_t> lanes;  ///< endpoint lanes; slices index this vector
  std::vector<Slice> slices;  ///< one slice: a whole message; more: fragments
  const MemHandle* memh = nullptr;
  ExecutorParams exec;
  /// The endpoint's order of waiting messages, which the op joins; null:
  /// none (the op posts whenever a lane has room).
  AmOrder* order = nullptr;
};

/// The payload bytes one fragment (or whole message) carries on `lane` for
/// `kind`, UCP headers excluded; 0 when the lane cannot carry it.
size_t am_fragment_capacity(const LaneRuntime& lane, ProtoKind kind, bool whole);

/// Whether a whole message of `length` payload bytes fits one am_short on
/// `lane`, its UCP header included.
inline bool am_short_fits(const LaneRuntime& lane, size_t length) {
  return (lane.attr.cap & uct::kCapAmShort) && length + kAmSingleHeader <= lane.attr.am.max_short;
}

/// Sends a whole message for handler `am_id` by am_short on `lane` (where
/// am_short_fits()): what the peer's UCP receives as a single message.
inline ucs::Status am_short_whole(const LaneRuntime& lane, uint16_t am_id, const void* payload,
                                  size_t length) {
  return lane.ep->am_short(kAmIdSingle, am_single_header_word(am_id), payload, length);
}

/// Sends each slice as a UCT active message with the UCP header of
/// am_wire.h, by short, bcopy or zcopy as the kind and the lane allow.
class AmOp : public RequestOp, private SliceIssuer {
 public:
  AmOp(const std::vector<LaneRuntime>* ep_lanes, AmParams params);
  ~AmOp() override { leave_order(); }

  ucs::Status progress() override;
  void abort() override {
    executor_.abort();
    leave_order();
  }
  size_t in_flight() const override { return orphaned_ ? 0 : executor_.in_flight(); }
  void orphan() override {
    orphaned_ = true;
    leave_order();
  }

 private:
  using Header = std::array<uint8_t, kAmFragHeader>;
  ucs::Status issue(size_t lane, const Slice& slice, uct::Completion* comp) override;
  ucs::Status issue_on(size_t lane, const Slice& slice, uct::Completion* comp);
  ucs::Status lane_status(size_t lane) const override;
  /// The header of a slice; stable in memory until this op goes.
  const Header& header(const Slice& s, bool whole);
  /// Leaves the endpoint's order (every slice posted, the op ended or its
  /// endpoint went): the next message may post.
  void leave_order();

  const std::vector<LaneRuntime>* ep_lanes_;
  AmParams params_;
  LocalRegs regs_;
  std::map<size_t, Header> headers_;  ///< by slice offset
  SliceExecutor executor_;
  bool orphaned_ = false;
};

}  // namespace mc::ucp::proto
