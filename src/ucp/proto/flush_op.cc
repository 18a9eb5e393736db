// SPDX-License-Identifier: Apache-2.0
// FlushOp.
#include "ucp/proto/flush_op.h"

namespace mc::ucp::proto {

using ucs::Status;

FlushOp::FlushOp(std::function<bool()> prior_done, std::vector<FlushTarget> targets,
                 std::function<bool(size_t)> lane_failed, std::function<Status()> lost)
    : prior_done_(std::move(prior_done)),
      targets_(std::move(targets)),
      lane_failed_(std::move(lane_failed)),
      lost_(std::move(lost)) {
  slots_.resize(targets_.size());
}

// The error is judged in progress(): a transport reports a lane's failure
// after it has completed that lane's flushes.
void FlushOp::on_completion(uct::Completion* comp) {
  auto* slot = static_cast<Slot*>(comp->arg);
  --slot->owner->in_flight_;
  slot->status = comp->status;
}

Status FlushOp::progress() {
  if (aborted_) return Status::Canceled;
  if (next_ == 0 && prior_done_ && !prior_done_()) return Status::InProgress;
  while (next_ < targets_.size()) {
    Slot& slot = slots_[next_];
    slot.owner = this;
    slot.index = next_;
    slot.comp = uct::Completion{};
    slot.comp.func = &FlushOp::on_completion;
    slot.comp.arg = &slot;
    const Status s = targets_[next_](&slot.comp);
    if (s == Status::NoResource) return Status::InProgress;
    ++next_;
    if (s == Status::InProgress) {
      ++in_flight_;
    } else if (is_error(s) && first_error_ == Status::Ok) {
      first_error_ = s;
    }
  }
  if (in_flight_ > 0) return Status::InProgress;
  for (const Slot& slot : slots_) {
    if (is_error(slot.status) && first_error_ == Status::Ok &&
        !(lane_failed_ && lane_failed_(slot.index))) {
      first_error_ = slot.status;
    }
  }
  if (first_error_ == Status::Ok && lost_) first_error_ = lost_();
  return first_error_;
}

}  // namespace mc::ucp::proto
