// SPDX-License-Identifier: Apache-2.0
// RmaOp: a put or a get, cut into slices over one or several lanes.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "ucp/api/rkey.h"
#include "ucp/proto/lane_runtime.h"
#include "ucp/proto/proto_select.h"
#include "ucp/proto/request_op.h"
#include "ucp/proto/rma_proto.h"
#include "ucp/proto/slice_executor.h"

namespace mc::ucp::proto {

/// What one put or get moves and how.
struct RmaParams {
  Op op = Op::Put;         ///< Put or Get
  void* buffer = nullptr;  ///< local source (put) or destination (get)
  size_t length = 0;
  uint64_t remote_addr = 0;
  ProtoKind kind = ProtoKind::Bcopy;
  std::vector<size_t> lanes;  ///< endpoint lanes; slices index this vector
  std::vector<Slice> slices;
  const Rkey* rkey = nullptr;
  const MemHandle* memh = nullptr;
  ExecutorParams exec;
};

/// Issues each slice on its lane with the call slice_call() picks there
/// (the kind's own, or the other mode when the slice does not fit the lane
/// it moved to).
class RmaOp : public RequestOp, private SliceIssuer {
 public:
  RmaOp(const std::vector<LaneRuntime>* ep_lanes, RmaParams params);

  ucs::Status progress() override { return executor_.progress(); }
  void abort() override { executor_.abort(); }
  size_t in_flight() const override { return orphaned_ ? 0 : executor_.in_flight(); }
  void orphan() override { orphaned_ = true; }
  /// The executor, for statistics and tests.
  const SliceExecutor& executor() const { return executor_; }

 private:
  ucs::Status issue(size_t lane, const Slice& slice, uct::Completion* comp) override;
  ucs::Status lane_status(size_t lane) const override;
  void completed(size_t lane, const Slice& slice) override;

  const std::vector<LaneRuntime>* ep_lanes_;
  RmaParams params_;
  LocalRegs regs_;
  SliceExecutor executor_;
  bool orphaned_ = false;
};

/// A single-slice put or get that its endpoint posted itself (a range's
/// immediate entry, rma_proto.h) and that the transport answered with InProgress: it completes
/// with that one transport operation. Should the operation fail, `retry`
/// makes the general op (an RmaOp) that takes the whole put or get over
/// from the start, on the lanes as they are then (another lane, retries):
/// what the general path does with a failed slice.
class PostedSliceOp : public RequestOp {
 public:
  /// The completion handed to the transport (its address stays put), and
  /// the put or get as posted, for `retry`.
  struct Slot {
    uct::Completion comp;
    bool fired = false;
    /// The lane carrying it, counted done by `length` bytes when it fires
    /// (LaneRuntime::rma_done_bytes); null: not counted.
    const LaneRuntime* lane = nullptr;
    size_t length = 0;
    Op op = Op::Put;
    const ProtoRange* range = nullptr;  ///< the range whose entry posted it
    void* buffer = nullptr;
    uint64_t remote_addr = 0;
    const Rkey* rkey = nullptr;
    const MemHandle* memh = nullptr;
    /// Ready for one more operation (the put or get's fields are the
    /// poster's to set).
    void reset();
  };
  /// Slots to reuse, kept by the worker: a post takes one, and the op
  /// gives it back once the transport has fired it (or at once, when the
  /// post completed in the call). Keeps up to kMaxSpare.
  class SlotCache {
   public:
    std::unique_ptr<Slot> take();
    void give(std::unique_ptr<Slot> slot);

   private:
    static constexpr size_t kMaxSpare = 1024;
    std::vector<std::unique_ptr<Slot>> spare_;
  };
  using Retry = std::function<std::unique_ptr<RequestOp>(const Slot&)>;

  /// `cache` must outlive every call of progress() (the worker's).
  PostedSliceOp(std::unique_ptr<Slot> slot, SlotCache* cache, Retry retry)
      : slot_(std::move(slot)), cache_(cache), retry_(std::move(retry)) {}

  /// From the thread's block cache, as requests are (request_alloc.h): one
  /// op per immediate put or get that completes later.
  static void* operator new(size_t size);
  static void operator delete(void* p);

  ucs::Status progress() override;
  void abort() override;
  size_t in_flight() const override;
  void orphan() override;

 private:
  std::unique_ptr<Slot> slot_;  ///< null once fired and given back
  SlotCache* cache_;
  Retry retry_;
  ucs::Status status_ = ucs::Status::InProgress;  ///< the slot's, once given back
  std::unique_ptr<RequestOp> general_;            ///< after a failure: the op that took over
  bool aborted_ = false;
  bool orphaned_ = false;
};

}  // namespace mc::ucp::proto
