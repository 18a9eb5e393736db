// SPDX-License-Identifier: Apache-2.0
// SliceExecutor: posts the slices of one request over its lanes with a
// bounded number in flight per lane, re-issues a failed slice on another
// lane, and reports the first error only when no lane is left.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "ucp/proto/slicing.h"
#include "uct/api/types.h"
#include "ucs/sys/visibility.h"

namespace mc::ucp::proto {

/// What an operation does with one slice on one lane.
class SliceIssuer {
 public:
  virtual ~SliceIssuer() = default;
  /// Posts `slice` on `lane` (an index into the executor's lanes). Returns Ok
  /// (done), InProgress (`comp` is completed later), NoResource (nothing was
  /// done: retry later) or an error (the lane is considered failed).
  virtual ucs::Status issue(size_t lane, const Slice& slice, uct::Completion* comp) = 0;
  /// Ok while `lane` can carry slices; an error once it cannot (its
  /// connection failed, no rkey for its memory domain, ...).
  virtual ucs::Status lane_status(size_t lane) const = 0;
  /// A slice that issue() answered InProgress on `lane` has completed, with
  /// any status (statistics; called before the executor acts on it).
  virtual void completed(size_t lane, const Slice& slice) {
    (void)lane;
    (void)slice;
  }
};

/// Limits of an executor.
struct ExecutorParams {
  size_t lanes = 1;          ///< lanes the slices' `lane` fields index
  uint64_t retry_cnt = 9;    ///< re-issues of one slice before the request fails
  size_t max_in_flight = 8;  ///< per lane
  /// Per lane, lower first: a re-issued slice goes to the lowest-ranked
  /// healthy lane (the least loaded among equals). Empty: all equal.
  std::vector<unsigned> lane_rank;
};

/// Not thread-safe: driven by the worker's progress, as the lanes are.
/// Slices' completions point into this object: it must outlive in_flight().
class MC_INTERNAL SliceExecutor {
 public:
  SliceExecutor(std::vector<Slice> slices, ExecutorParams params, SliceIssuer* issuer);
  SliceExecutor(const SliceExecutor&) = delete;
  SliceExecutor& operator=(const SliceExecutor&) = delete;

  /// Posts what the lanes accept. Returns InProgress until every slice is
  /// done (Ok), or the first error once a slice has no lane or retry left.
  ucs::Status progress();
  /// Stops posting; slices in flight still complete into this object.
  void abort();
  /// UCT operations posted and not yet completed.
  size_t in_flight() const { return in_flight_; }
  /// Whether some slice waits to be posted (a lane had no room for it).
  bool waiting() const {
    for (const Lane& l : lanes_) {
      if (l.queued > 0) return true;
    }
    return false;
  }
  /// Re-issues so far (tests, statistics).
  size_t retries() const { return retries_; }
  /// The slices, with the lane each one was last posted on.
  std::vector<Slice> slices() const;

 private:
  static constexpr size_t kNone = SIZE_MAX;
  struct State {
    Slice slice;
    uint64_t tries = 0;
    uct::Completion comp;
    SliceExecutor* owner = nullptr;
    size_t index = 0;
    size_t next = kNone;  ///< the slice after it in its lane's queue
  };
  /// A lane's queue is a list through State::next (no allocation per lane).
  struct Lane {
    size_t head = kNone;
    size_t tail = kNone;
    size_t queued = 0;
    size_t in_flight = 0;
    bool failed = false;
  };

  static void on_completion(uct::Completion* comp);
  void post_lane(size_t lane);
  void fail_slice(size_t index, ucs::Status status);
  void fail_lane(size_t lane, ucs::Status status);
  bool requeue(size_t index);
  void push_back(size_t lane, size_t index);
  void push_front(size_t lane, size_t index);
  size_t pop_front(size_t lane);

  std::vector<State> states_;  ///< never resized: completions point into it
  ExecutorParams params_;
  SliceIssuer* issuer_;
  std::vector<Lane> lanes_;  ///< slices waiting, per lane
  size_t done_ = 0;
  size_t in_flight_ = 0;
  size_t retries_ = 0;
  ucs::Status first_error_ = ucs::Status::Ok;
  ucs::Status final_ = ucs::Status::InProgress;
};

}  // namespace mc::ucp::proto
