// SPDX-License-Identifier: Apache-2.0
// The accepting side of a tcp iface (see tcp_listener.h).
#include "uct/tcp/tcp_listener.h"

#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "ucs/log/log.h"
#include "ucs/sys/sys.h"
#include "uct/tcp/tcp_wire.h"

namespace mc::uct::tcp {

namespace {

// Accepts per callback: the loop is level-triggered and calls again, and
// the connections already open are served in between.
constexpr int kAcceptBatch = 64;

int64_t ms(std::chrono::nanoseconds d) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}

}  // namespace

TcpListener::TcpListener(ucs::EventLoop* loop, std::mutex* lock, int fd, std::string where,
                         const Params& params, Adopt adopt, Drop drop)
    : loop_(loop),
      lock_(lock),
      fd_(fd),
      where_(std::move(where)),
      params_(params),
      adopt_(std::move(adopt)),
      drop_(std::move(drop)),
      drop_log_(std::chrono::seconds(1), 5) {
  params_.max_pending = std::max<size_t>(1, params_.max_pending);
}

TcpListener::~TcpListener() {
  if (fd_ >= 0) close(fd_);
}

Status TcpListener::start() {
  return loop_->add_fd(fd_, EPOLLIN, [this](int, uint32_t) { on_ready(); });
}

void TcpListener::stop() {
  uint64_t timers[2];
  {
    std::lock_guard guard(*lock_);
    closing_ = true;
    timers[0] = std::exchange(resume_timer_, 0);
    timers[1] = std::exchange(sweep_timer_, 0);
  }
  // Without the lock: these wait for a callback in flight, which takes it.
  for (uint64_t timer : timers) {
    if (timer) (void)loop_->cancel_timer(timer);
  }
  (void)loop_->remove_fd(fd_);
}

void TcpListener::on_ready() {
  for (int n = 0; n < kAcceptBatch; ++n) {
    const int fd = accept4(fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      if (ucs::accept_retry_now(errno)) continue;
      pause(errno);
      return;
    }
    if (failed_ > 0) {
      MC_LOG(warn) << "tcp: accept on " << where_ << " works again after "
                   << std::exchange(failed_, 0) << " failures";
    }
    std::shared_ptr<TcpConn> conn = adopt_(fd);
    if (!conn) continue;
    std::lock_guard guard(*lock_);
    track_locked(std::move(conn));
  }
}

void TcpListener::pause(int err) {
  // Out of descriptors (EMFILE, ENFILE), socket buffers or memory: the
  // socket stays readable, and accepting again at once would spin. The
  // connections wait in the backlog meanwhile.
  ++failed_;
  if (auto v = accept_log_.check(); v.log) {
    MC_LOG(warn) << "tcp: accept on " << where_ << ": " << ucs::errno_string(err) << "; "
                 << v.suppressed + 1 << " failed since the last report, pausing "
                 << ms(params_.backoff) << " ms after each";
  }
  std::lock_guard guard(*lock_);
  if (closing_ || resume_timer_) return;
  (void)loop_->modify_fd(fd_, 0);
  Result<uint64_t> timer = loop_->add_timer(
      params_.backoff, [this] { resume(); }, true);
  if (timer.ok()) {
    resume_timer_ = *timer;
  } else {
    (void)loop_->modify_fd(fd_, EPOLLIN);  // logged; better busy than deaf
  }
}

void TcpListener::resume() {
  std::lock_guard guard(*lock_);
  resume_timer_ = 0;  // a oneshot timer is gone once it fired
  if (closing_) return;
  (void)loop_->modify_fd(fd_, EPOLLIN);
}

void TcpListener::track_locked(std::shared_ptr<TcpConn> conn) {
  std::erase_if(pending_, [](const Pending& p) {
    auto c = p.conn.lock();
    return !c || c->dead_locked() || c->hello_seen;
  });
  const uint64_t now = ucs::monotonic_ns();
  while (pending_.size() >= params_.max_pending) {
    // The oldest that has no whole frame (its hello) waiting to be read: a
    // peer whose hello arrived while the accepts of a flood were served
    // first keeps its slot. The oldest of all when every one has.
    auto victim = pending_.begin();
    for (auto it = pending_.begin(); it != pending_.end(); ++it) {
      std::shared_ptr<TcpConn> c = it->conn.lock();
      int queued = 0;
      if (!c || ioctl(c->fd(), FIONREAD, &queued) != 0 ||
          queued < static_cast<int>(wire::kHeaderSize)) {
        victim = it;
        break;
      }
    }
    std::shared_ptr<TcpConn> oldest = victim->conn.lock();
    pending_.erase(victim);
    if (!oldest) continue;
    if (auto v = drop_log_.check(); v.log) {
      MC_LOG(warn) << "tcp: closing " << oldest->name() << ", the oldest of " << params_.max_pending
                   << " connections accepted on " << where_
                   << " that sent no hello, for a new one (MC_TCP_MAX_PENDING_ACCEPTS)" << v.note();
    }
    drop_(*oldest);
  }
  pending_.push_back({now + static_cast<uint64_t>(params_.hello_timeout.count()), conn});
  arm_sweep_locked(now);
}

void TcpListener::arm_sweep_locked(uint64_t now) {
  if (closing_ || sweep_timer_ || pending_.empty()) return;
  const uint64_t due = pending_.front().deadline_ns;
  const auto in = std::chrono::nanoseconds(due > now ? due - now : 1);
  Result<uint64_t> timer = loop_->add_timer(
      in, [this] { sweep(); }, true);
  if (timer.ok()) sweep_timer_ = *timer;  // else logged; the next accept tries again
}

void TcpListener::sweep() {
  std::lock_guard guard(*lock_);
  sweep_timer_ = 0;
  if (closing_) return;
  const uint64_t now = ucs::monotonic_ns();
  while (!pending_.empty()) {
    std::shared_ptr<TcpConn> conn = pending_.front().conn.lock();
    if (conn && !conn->dead_locked() && !conn->hello_seen) {
      if (pending_.front().deadline_ns > now) break;
      if (auto v = drop_log_.check(); v.log) {
        MC_LOG(warn) << "tcp: closing " << conn->name() << ", accepted on " << where_
                     << ": no hello within " << ms(params_.hello_timeout)
                     << " ms (MC_TCP_ACCEPT_TIMEOUT)" << v.note();
      }
      drop_(*conn);
    }
    pending_.pop_front();
  }
  arm_sweep_locked(now);
}

}  // namespace mc::uct::tcp
