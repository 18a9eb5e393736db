// SPDX-License-Identifier: Apache-2.0
// SliceExecutor.
#include "ucp/proto/slice_executor.h"

#include <string>

#include "ucs/log/log.h"

namespace mc::ucp::proto {

using ucs::Status;

SliceExecutor::SliceExecutor(std::vector<Slice> slices, ExecutorParams params, SliceIssuer* issuer)
    : states_(slices.size()), params_(std::move(params)), issuer_(issuer), lanes_(params_.lanes) {
  for (size_t i = 0; i < slices.size(); ++i) {
    State& st = states_[i];
    st.slice = slices[i];
    if (st.slice.lane >= params_.lanes) st.slice.lane = 0;
    st.owner = this;
    st.index = i;
    push_back(st.slice.lane, i);
  }
  if (states_.empty()) final_ = Status::Ok;
}

void SliceExecutor::push_back(size_t lane, size_t index) {
  Lane& l = lanes_[lane];
  states_[index].next = kNone;
  if (l.tail == kNone) {
    l.head = index;
  } else {
    states_[l.tail].next = index;
  }
  l.tail = index;
  ++l.queued;
}

void SliceExecutor::push_front(size_t lane, size_t index) {
  Lane& l = lanes_[lane];
  states_[index].next = l.head;
  l.head = index;
  if (l.tail == kNone) l.tail = index;
  ++l.queued;
}

size_t SliceExecutor::pop_front(size_t lane) {
  Lane& l = lanes_[lane];
  const size_t index = l.head;
  l.head = states_[index].next;
  if (l.head == kNone) l.tail = kNone;
  states_[index].next = kNone;
  --l.queued;
  return index;
}

std::vector<Slice> SliceExecutor::slices() const {
  std::vector<Slice> out;
  for (const State& st : states_) out.push_back(st.slice);
  return out;
}

void SliceExecutor::on_completion(uct::Completion* comp) {
  auto* st = static_cast<State*>(comp->arg);
  SliceExecutor* self = st->owner;
  --self->in_flight_;
  --self->lanes_[st->slice.lane].in_flight;
  self->issuer_->completed(st->slice.lane, st->slice);
  if (self->final_ != Status::InProgress) return;  // aborted or already failed
  if (is_error(comp->status)) {
    self->fail_slice(st->index, comp->status);
  } else {
    ++self->done_;
  }
}

Status SliceExecutor::progress() {
  for (size_t lane = 0; lane < lanes_.size() && final_ == Status::InProgress; ++lane) {
    if (lanes_[lane].failed) continue;
    const Status ls = issuer_->lane_status(lane);
    if (is_error(ls)) {
      fail_lane(lane, ls);
      continue;
    }
    post_lane(lane);
  }
  if (final_ == Status::InProgress && done_ == states_.size()) final_ = Status::Ok;
  return final_;
}

void SliceExecutor::post_lane(size_t lane) {
  Lane& l = lanes_[lane];
  while (l.head != kNone && l.in_flight < params_.max_in_flight && final_ == Status::InProgress &&
         !l.failed) {
    const size_t index = l.head;
    State& st = states_[index];
    st.slice.lane = lane;
    st.comp = uct::Completion{};
    st.comp.func = &SliceExecutor::on_completion;
    st.comp.arg = &st;
    const Status s = issuer_->issue(lane, st.slice, &st.comp);
    if (s == Status::NoResource) return;
    (void)pop_front(lane);
    if (s == Status::Ok) {
      ++done_;
    } else if (s == Status::InProgress) {
      ++in_flight_;
      ++l.in_flight;
    } else {
      fail_slice(index, s);
    }
  }
}

void SliceExecutor::fail_slice(size_t index, Status status) {
  State& st = states_[index];
  if (first_error_ == Status::Ok) first_error_ = status;
  fail_lane(st.slice.lane, status);
  if (final_ != Status::InProgress) return;
  if (++st.tries > params_.retry_cnt || !requeue(index)) {
    final_ = first_error_;
    return;
  }
  MC_LOG(debug) << "ucp: re-issuing slice " << index << " (offset " << st.slice.offset
                << ") on lane " << st.slice.lane << ", try " << st.tries;
}

void SliceExecutor::fail_lane(size_t lane, Status status) {
  if (first_error_ == Status::Ok) first_error_ = status;
  if (lanes_[lane].failed) return;
  lanes_[lane].failed = true;
  // Its waiting slices, in order, leave the lane's queue.
  std::vector<size_t> waiting;
  waiting.reserve(lanes_[lane].queued);
  while (lanes_[lane].head != kNone) waiting.push_back(pop_front(lane));
  // Once per lane and request; the slices in flight there follow one by one
  // as their completions fail (fail_slice).
  size_t healthy = 0;
  for (size_t l = 0; l < lanes_.size(); ++l) {
    healthy += !lanes_[l].failed && !is_error(issuer_->lane_status(l));
  }
  if (healthy > 0) {
    // News when this request found the failure; a lane its endpoint already
    // knows is down (and logged once) is routine for every request after.
    const bool known = is_error(issuer_->lane_status(lane));
    if (!known || MC_LOG_IS_ON(debug)) {
      const std::string msg = "ucp: lane " + std::to_string(lane) + " of a " +
                              std::to_string(states_.size()) + "-slice request failed (" +
                              ucs::status_string(status) + "): re-issuing its " +
                              std::to_string(waiting.size()) + " waiting and " +
                              std::to_string(lanes_[lane].in_flight) + " in-flight slice(s) on " +
                              std::to_string(healthy) + " other lane(s)";
      if (known) {
        MC_LOG(debug) << msg;
      } else {
        MC_LOG(warn) << msg;
      }
    }
  } else {
    MC_LOG(debug) << "ucp: lane " << lane << " of a request failed (" << ucs::status_string(status)
                  << ") and no other lane is left";
  }
  for (size_t index : waiting) {
    if (!requeue(index)) {
      final_ = first_error_;
      return;
    }
  }
}

// Puts a slice at the front of the least loaded healthy lane of the lowest
// rank.
bool SliceExecutor::requeue(size_t index) {
  const auto rank = [this](size_t l) {
    return l < params_.lane_rank.size() ? params_.lane_rank[l] : 0u;
  };
  const auto load = [this](size_t l) { return lanes_[l].queued + lanes_[l].in_flight; };
  size_t best = lanes_.size();
  for (size_t l = 0; l < lanes_.size(); ++l) {
    if (lanes_[l].failed || is_error(issuer_->lane_status(l))) continue;
    if (best == lanes_.size() || rank(l) < rank(best) ||
        (rank(l) == rank(best) && load(l) < load(best))) {
      best = l;
    }
  }
  if (best == lanes_.size()) return false;
  ++retries_;
  states_[index].slice.lane = best;
  push_front(best, index);
  return true;
}

void SliceExecutor::abort() {
  if (final_ == Status::InProgress) final_ = Status::Canceled;
}

}  // namespace mc::ucp::proto
