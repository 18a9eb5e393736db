// SPDX-License-Identifier: Apache-2.0
// FlushOp: waits for the requests before it, then flushes a set of UCT
// endpoints or ifaces and completes when they all have.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <vector>

#include "ucp/proto/request_op.h"
#include "uct/api/types.h"

namespace mc::ucp::proto {

/// Starts one UCT flush: Ok (nothing outstanding), InProgress (`comp` runs
/// later), NoResource (retry later) or an error.
using FlushTarget = std::function<ucs::Status(uct::Completion* comp)>;

/// Losses of data that had completed locally (short, bcopy, eager AM) on a
/// lane that then failed: each may never have arrived, and no flush of the
/// lanes left can tell. A flush fails when such a loss happened after the
/// previous flush took the count, so a loss reaches the flushes pending
/// then and the first one made after it, never none (a lane reconnected
/// since has nothing outstanding that would tell). An endpoint keeps one
/// for its flushes, the worker one for its own (which cover every endpoint).
class LossCount {
 public:
  /// A loss, with the lane's failure.
  void note(ucs::Status status) {
    ++epoch_;
    status_ = status;
  }
  /// For a flush starting now: takes the count, and returns its FlushOp's
  /// `lost`. The count must outlive the flush.
  std::function<ucs::Status()> take() {
    const uint64_t before = taken_;
    taken_ = epoch_;
    return [this, before] { return epoch_ > before ? status_ : ucs::Status::Ok; };
  }

 private:
  uint64_t epoch_ = 0;
  uint64_t taken_ = 0;
  ucs::Status status_ = ucs::Status::Ok;  ///< the failure behind the latest loss
};

class FlushOp : public RequestOp {
 public:
  /// `prior_done` says when every earlier request has completed.
  /// `lane_failed(i)`, when given, says that target i's lane has failed
  /// since: its flush error is then ignored, as its slices went to other
  /// lanes, whose completion `prior_done` already covers. `lost`, when
  /// given, is asked once the targets are flushed: an error when data that
  /// had completed locally (short, bcopy, eager AM) was lost with a failed
  /// lane, which no flush of the lanes left can tell.
  FlushOp(std::function<bool()> prior_done, std::vector<FlushTarget> targets,
          std::function<bool(size_t)> lane_failed = {}, std::function<ucs::Status()> lost = {});

  ucs::Status progress() override;
  void abort() override { aborted_ = true; }
  size_t in_flight() const override { return orphaned_ ? 0 : in_flight_; }
  void orphan() override { orphaned_ = true; }

 private:
  struct Slot {
    FlushOp* owner = nullptr;
    size_t index = 0;
    uct::Completion comp;
    ucs::Status status = ucs::Status::Ok;  ///< of its flush, once completed
  };
  static void on_completion(uct::Completion* comp);

  std::function<bool()> prior_done_;
  std::vector<FlushTarget> targets_;
  std::function<bool(size_t)> lane_failed_;
  std::function<ucs::Status()> lost_;
  std::deque<Slot> slots_;  ///< one per target; a deque keeps them in place
  size_t next_ = 0;         ///< the next target to start
  size_t in_flight_ = 0;
  ucs::Status first_error_ = ucs::Status::Ok;
  bool aborted_ = false;
  bool orphaned_ = false;
};

}  // namespace mc::ucp::proto
