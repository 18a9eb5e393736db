// SPDX-License-Identifier: Apache-2.0
// FIFO of pending requests (NoResource back-pressure), for transports.
#pragma once

#include <functional>

#include "uct/api/types.h"

namespace mc::uct {

/// Intrusive FIFO through PendingReq::next. Not thread-safe: used from the
/// thread that drives the iface.
class PendingQueue {
 public:
  bool empty() const { return head_ == nullptr; }

  void push(PendingReq* req) {
    req->next = nullptr;
    if (tail_) {
      tail_->next = req;
    } else {
      head_ = req;
    }
    tail_ = req;
  }

  /// Calls queued requests in order until one answers NoResource (it stays
  /// first). Returns how many completed.
  unsigned dispatch() {
    unsigned done = 0;
    while (head_) {
      PendingReq* req = head_;
      if (req->func(req) == Status::NoResource) break;
      pop_front();
      ++done;
    }
    return done;
  }

  /// Removes every request, calling `cb` on each.
  void purge(const std::function<void(PendingReq*)>& cb) {
    while (head_) {
      PendingReq* req = head_;
      pop_front();
      if (cb) cb(req);
    }
  }

 private:
  void pop_front() {
    head_ = head_->next;
    if (!head_) tail_ = nullptr;
  }

  PendingReq* head_ = nullptr;
  PendingReq* tail_ = nullptr;
};

}  // namespace mc::uct
