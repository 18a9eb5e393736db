// SPDX-License-Identifier: Apache-2.0
// Request: completion, deadline and the user-facing calls.
#include "ucp/api/request.h"

#include "ucp/core/worker.h"
#include "ucp/proto/request_op.h"
#include "ucs/sys/sys.h"

namespace mc::ucp {

Request::Request(Key, WorkerImpl* worker, EndpointImpl* ep, uint64_t seq, Callback callback,
                 uint64_t deadline_ns, std::unique_ptr<proto::RequestOp> op)
    : worker_(worker),
      ep_(ep),
      seq_(seq),
      callback_(std::move(callback)),
      deadline_ns_(deadline_ns),
      op_(std::move(op)) {}

Request::~Request() = default;

Status Request::test() {
  if (!completed()) worker_->progress();
  return status_;
}

Status Request::wait() {
  while (!completed()) worker_->progress();
  return status_;
}

void Request::cancel() {
  std::unique_lock guard = worker_->lock();
  if (completed()) return;
  op_->abort();
  complete(Status::Canceled);
}

void Request::advance(uint64_t now_ns) {
  if (completed()) return;
  if (settling_ == Status::InProgress) settling_ = op_->progress();
  if (settling_ != Status::InProgress && op_->in_flight() == 0) {
    complete(settling_);
  } else if (now_ns >= deadline_ns_) {
    op_->abort();
    complete(settling_ != Status::InProgress ? settling_ : Status::Timeout);
  }
}

void Request::complete(Status status) {
  if (completed()) return;
  status_.store(status);
  if (callback_) {
    Callback cb = std::move(callback_);
    cb(status);
  }
}

bool Request::settled() const {
  return completed() && (!op_ || op_->in_flight() == 0);
}

}  // namespace mc::ucp
