// SPDX-License-Identifier: Apache-2.0
// FlushOp: waits for the requests before it, then flushes a set of UCT
// endpoints or ifaces and completes when they all have.
#pragma once

#include <deque>
#include <functional>
#include <vector>

#include "ucp/proto/request_op.h"
#include "uct/api/types.h"

namespace mc::ucp::proto {

/// Starts one UCT flush: Ok (nothing outstanding), InProgress (`comp` runs
/// later), NoResource (retry later) or an error.
using FlushTarget = std::function<ucs::Status(uct::Completion* comp)>;

class FlushOp : public RequestOp {
 public:
  /// `prior_done` says when every earlier request has completed.
  FlushOp(std::function<bool()> prior_done, std::vector<FlushTarget> targets);

  ucs::Status progress() override;
  void abort() override { aborted_ = true; }
  size_t in_flight() const override { return orphaned_ ? 0 : in_flight_; }
  void orphan() override { orphaned_ = true; }

 private:
  struct Slot {
    FlushOp* owner = nullptr;
    uct::Completion comp;
  };
  static void on_completion(uct::Completion* comp);

  std::function<bool()> prior_done_;
  std::vector<FlushTarget> targets_;
  std::deque<Slot> slots_;  ///< one per target; a deque keeps them in place
  size_t next_ = 0;         ///< the next target to start
  size_t in_flight_ = 0;
  ucs::Status first_error_ = ucs::Status::Ok;
  bool aborted_ = false;
  bool orphaned_ = false;
};

}  // namespace mc::ucp::proto
