// SPDX-License-Identifier: Apache-2.0
// Worker: blocking progress (one epoll fd over the ifaces' event fds and a
// wake-up eventfd).
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>

#include "ucp/core/worker.h"
#include "ucs/log/log.h"
#include "ucs/sys/sys.h"

namespace mc::ucp {

namespace {

constexpr uint64_t kWakeTag = UINT64_MAX;  ///< epoll data of the wake-up fd
/// Longest sleep while a lane is being reconnected.
constexpr ucs::config::Duration kReconnectPoll = std::chrono::milliseconds(50);

}  // namespace

Status WorkerImpl::init_wait() {
  epfd_ = epoll_create1(EPOLL_CLOEXEC);
  if (epfd_ < 0) {
    MC_LOG(error) << "ucp: epoll_create1() failed: " << ucs::errno_string(errno);
    return Status::IoError;
  }
  wakefd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wakefd_ < 0) {
    MC_LOG(error) << "ucp: eventfd() failed: " << ucs::errno_string(errno);
    return Status::IoError;
  }
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = kWakeTag;
  if (epoll_ctl(epfd_, EPOLL_CTL_ADD, wakefd_, &ev) != 0) {
    MC_LOG(error) << "ucp: epoll_ctl() failed: " << ucs::errno_string(errno);
    return Status::IoError;
  }
  for (size_t k = 0; k < ifaces_.size(); ++k) {
    Result<int> fd = (ifaces_[k].attr.cap & uct::kCapEventFd) ? ifaces_[k].iface->event_fd()
                                                              : Result<int>(Status::Unsupported);
    ev.data.u64 = k;
    // EEXIST: an fd an earlier iface added, a loop the two share (tcp's
    // ifaces of one worker): watched already.
    if (fd.ok() && (epoll_ctl(epfd_, EPOLL_CTL_ADD, *fd, &ev) == 0 || errno == EEXIST)) {
      armable_.push_back(k);
    } else {
      polled_.store(true, std::memory_order_relaxed);
    }
  }
  return Status::Ok;
}

Status WorkerImpl::arm() {
  std::unique_lock guard = lock();
  if (!pending_rts_.empty()) return Status::Busy;
  for (size_t k : armable_) {
    const Status s = ifaces_[k].iface->arm();
    if (s == Status::Busy) {
      ifaces_[k].quiet_calls = 0;  // the next progress() serves it
      return Status::Busy;
    }
    if (is_error(s)) {
      MC_LOG(warn) << "ucp: cannot arm " << context_->resources()[ifaces_[k].resource].name()
                   << ": " << ucs::status_string(s) << "; it is polled from now on";
      polled_.store(true, std::memory_order_relaxed);
    }
  }
  return Status::Ok;
}

Status WorkerImpl::wait(ucs::config::Duration timeout) {
  if (arm() == Status::Busy) return Status::Ok;
  bool bounded = polled_.load(std::memory_order_relaxed);
  bool reconnecting = false;
  {
    std::unique_lock guard = lock();
    // A request in progress may need progress() to post or to time out.
    for (const std::shared_ptr<Request>& r : active_) bounded = bounded || !r->completed();
    // A lane to reconnect is checked by progress(); no fd says when.
    reconnecting = !reconnecting_.empty();
  }
  ucs::config::Duration sleep = timeout;
  if (bounded && context_->config().poll_interval < sleep) {
    sleep = context_->config().poll_interval;
  }
  sleep = reconnecting ? std::min<ucs::config::Duration>(sleep, kReconnectPoll) : sleep;
  int ms = -1;
  if (sleep != ucs::config::Duration::max()) {
    const int64_t ns = std::max<int64_t>(sleep.count(), 0);
    ms = static_cast<int>(std::min<int64_t>((ns + 999999) / 1000000, INT32_MAX));
  }
  epoll_event evs[8];
  int n;
  do {
    n = epoll_wait(epfd_, evs, 8, ms);
  } while (n < 0 && errno == EINTR);
  if (n < 0) {
    MC_LOG(error) << "ucp: epoll_wait() failed: " << ucs::errno_string(errno);
    return Status::IoError;
  }
  woken();
  if (n > 0 || sleep < timeout) return Status::Ok;
  return Status::Timeout;
}

void WorkerImpl::woken() {
  uint64_t count = 0;
  (void)!read(wakefd_, &count, sizeof(count));  // non-blocking: 0 or what signal() added
  // Whatever woke the sleep (an iface's event fd, the poll interval for the
  // polled ones), the next progress() serves every iface, however quiet it
  // was (see WorkerImpl::progress).
  std::unique_lock guard = lock();
  for (WorkerIface& wi : ifaces_) wi.quiet_calls = 0;
}

void WorkerImpl::signal() {
  const uint64_t one = 1;
  (void)!write(wakefd_, &one, sizeof(one));
}

}  // namespace mc::ucp
