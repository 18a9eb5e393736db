// SPDX-License-Identifier: Apache-2.0
// FlushOp.
#include "ucp/proto/flush_op.h"

namespace mc::ucp::proto {

using ucs::Status;

FlushOp::FlushOp(std::function<bool()> prior_done, std::vector<FlushTarget> targets)
    : prior_done_(std::move(prior_done)), targets_(std::move(targets)) {
  slots_.resize(targets_.size());
}

void FlushOp::on_completion(uct::Completion* comp) {
  auto* self = static_cast<FlushOp*>(comp->arg);
  --self->in_flight_;
  if (is_error(comp->status) && self->first_error_ == Status::Ok) {
    self->first_error_ = comp->status;
  }
}

Status FlushOp::progress() {
  if (aborted_) return Status::Canceled;
  if (next_ == 0 && prior_done_ && !prior_done_()) return Status::InProgress;
  while (next_ < targets_.size()) {
    Slot& slot = slots_[next_];
    slot.owner = this;
    slot.comp = uct::Completion{};
    slot.comp.func = &FlushOp::on_completion;
    slot.comp.arg = this;
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
  return first_error_;
}

}  // namespace mc::ucp::proto
