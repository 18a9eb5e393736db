// SPDX-License-Identifier: Apache-2.0
// EventLoop: registration, dispatch with safe removal, timers over one
// timerfd, the post() queue, and the loop thread.
#include "ucs/async/event_loop.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <system_error>

#include "ucs/log/log.h"
#include "ucs/sys/sys.h"

namespace mc::ucs {

namespace {

constexpr int kMaxEvents = 64;

// Reads an eventfd or timerfd counter to reset its readiness. EAGAIN means
// another wake-up already drained it; nothing else is expected.
void drain(int fd, const char* what) {
  uint64_t value;
  if (read(fd, &value, sizeof(value)) < 0 && errno != EAGAIN && errno != EINTR) {
    MC_LOG(error) << "read(" << what << " fd " << fd << ") failed: " << errno_string(errno);
  }
}

}  // namespace

Result<std::unique_ptr<EventLoop>> EventLoop::create() {
  std::unique_ptr<EventLoop> loop(new EventLoop());
  MC_RETURN_IF_ERROR(loop->init());
  return loop;
}

Status EventLoop::init() {
  epfd_ = epoll_create1(EPOLL_CLOEXEC);
  if (epfd_ < 0) {
    MC_LOG(error) << "epoll_create1() failed: " << errno_string(errno);
    return Status::IoError;
  }
  wakefd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wakefd_ < 0) {
    MC_LOG(error) << "eventfd() failed: " << errno_string(errno);
    return Status::IoError;
  }
  timerfd_ = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  if (timerfd_ < 0) {
    MC_LOG(error) << "timerfd_create(CLOCK_MONOTONIC) failed: " << errno_string(errno);
    return Status::IoError;
  }
  for (auto [fd, key] : {std::pair{wakefd_, kWakeKey}, std::pair{timerfd_, kTimerKey}}) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = key;
    if (epoll_ctl(epfd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
      MC_LOG(error) << "epoll_ctl(ADD, fd " << fd << ") failed: " << errno_string(errno);
      return Status::IoError;
    }
  }
  return Status::Ok;
}

EventLoop::~EventLoop() {
  (void)stop();
  for (int fd : {timerfd_, wakefd_, epfd_}) {
    if (fd >= 0) close(fd);
  }
}

Status EventLoop::add_fd(int fd, uint32_t events, FdCallback cb) {
  if (fd < 0 || !cb) return Status::InvalidParam;
  std::lock_guard guard(lock_);
  if (fd_keys_.count(fd) != 0) return Status::Exists;
  const uint64_t key = next_key_++;
  epoll_event ev{};
  ev.events = events;
  ev.data.u64 = key;
  if (epoll_ctl(epfd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
    MC_LOG(error) << "epoll_ctl(ADD, fd " << fd << ") failed: " << errno_string(errno);
    return Status::IoError;
  }
  fd_keys_.emplace(fd, key);
  fd_handlers_.emplace(key, std::make_shared<FdHandler>(FdHandler{fd, std::move(cb)}));
  return Status::Ok;
}

Status EventLoop::modify_fd(int fd, uint32_t events) {
  std::lock_guard guard(lock_);
  auto it = fd_keys_.find(fd);
  if (it == fd_keys_.end()) return Status::NoElem;
  epoll_event ev{};
  ev.events = events;
  ev.data.u64 = it->second;
  if (epoll_ctl(epfd_, EPOLL_CTL_MOD, fd, &ev) != 0) {
    MC_LOG(error) << "epoll_ctl(MOD, fd " << fd << ") failed: " << errno_string(errno);
    return Status::IoError;
  }
  return Status::Ok;
}

Status EventLoop::remove_fd(int fd) {
  std::unique_lock guard(lock_);
  auto it = fd_keys_.find(fd);
  if (it == fd_keys_.end()) return Status::NoElem;
  const uint64_t key = it->second;
  fd_keys_.erase(it);
  fd_handlers_.erase(key);
  if (epoll_ctl(epfd_, EPOLL_CTL_DEL, fd, nullptr) != 0) {
    // Closing an fd removes it from epoll by itself; the handler is gone.
    MC_LOG(debug) << "epoll_ctl(DEL, fd " << fd << ") failed: " << errno_string(errno);
  }
  wait_not_in_call(guard, key);
  return Status::Ok;
}

Result<EventLoop::TimerId> EventLoop::add_timer(std::chrono::nanoseconds interval, TimerCallback cb,
                                                bool oneshot) {
  if (interval.count() <= 0 || !cb) return Status::InvalidParam;
  std::lock_guard guard(lock_);
  const TimerId id = next_key_++;
  const uint64_t now = monotonic_ns();
  const auto ns = static_cast<uint64_t>(interval.count());
  const uint64_t deadline = ns > UINT64_MAX - now ? UINT64_MAX : now + ns;
  timers_.emplace(
      id, Timer{interval, oneshot, deadline, std::make_shared<TimerCallback>(std::move(cb))});
  deadlines_.emplace(deadline, id);
  if (deadlines_.begin()->second == id) {
    const Status s = arm_timer_locked();
    if (is_error(s)) {
      deadlines_.erase({deadline, id});
      timers_.erase(id);
      return s;
    }
  }
  return id;
}

Status EventLoop::cancel_timer(TimerId id) {
  std::unique_lock guard(lock_);
  auto it = timers_.find(id);
  if (it == timers_.end()) return Status::NoElem;
  deadlines_.erase({it->second.deadline_ns, id});
  timers_.erase(it);
  // The timerfd stays armed: an early wake-up finds nothing due and re-arms.
  wait_not_in_call(guard, id);
  return Status::Ok;
}

Status EventLoop::post(std::function<void()> fn) {
  if (!fn) return Status::InvalidParam;
  {
    std::lock_guard guard(lock_);
    posted_.push_back(std::move(fn));
    has_posted_.store(true, std::memory_order_release);
  }
  return wake();
}

Result<size_t> EventLoop::progress(std::chrono::milliseconds timeout) {
  bool idle = false;
  if (!in_progress_.compare_exchange_strong(idle, true, std::memory_order_acquire)) {
    return Status::Busy;
  }
  driver_.store(std::this_thread::get_id(), std::memory_order_relaxed);
  const int ms = timeout.count() < 0         ? -1
                 : timeout.count() > INT_MAX ? INT_MAX
                                             : static_cast<int>(timeout.count());
  Result<size_t> r = poll_once(ms);
  progress_count_.fetch_add(1, std::memory_order_relaxed);
  driver_.store(std::thread::id(), std::memory_order_relaxed);
  in_progress_.store(false, std::memory_order_release);
  return r;
}

Status EventLoop::start() {
  std::lock_guard control(control_lock_);
  if (thread_.joinable()) {
    if (running_.load(std::memory_order_acquire)) return Status::Busy;
    thread_.join();  // it exited by itself after a stop() from a callback
  }
  bool idle = false;
  if (!in_progress_.compare_exchange_strong(idle, true, std::memory_order_acquire)) {
    return Status::Busy;
  }
  stop_requested_.store(false, std::memory_order_relaxed);
  running_.store(true, std::memory_order_release);
  try {
    thread_ = std::thread(&EventLoop::run, this);
  } catch (const std::system_error& e) {
    MC_LOG(error) << "cannot start the event loop thread: " << e.what();
    running_.store(false, std::memory_order_release);
    in_progress_.store(false, std::memory_order_release);
    return Status::IoError;
  }
  return Status::Ok;
}

Status EventLoop::stop() {
  if (running_.load(std::memory_order_acquire) && in_loop_thread()) {
    // Joining ourselves would deadlock; the thread exits after this callback.
    stop_requested_.store(true, std::memory_order_release);
    return Status::InProgress;
  }
  std::lock_guard control(control_lock_);
  if (!thread_.joinable()) return Status::Ok;
  stop_requested_.store(true, std::memory_order_release);
  (void)wake();
  thread_.join();
  running_.store(false, std::memory_order_release);
  return Status::Ok;
}

bool EventLoop::in_loop_thread() const {
  return driver_.load(std::memory_order_relaxed) == std::this_thread::get_id();
}

void EventLoop::run() {
  set_thread_name("mc_async");
  driver_.store(std::this_thread::get_id(), std::memory_order_relaxed);
  while (!stop_requested_.load(std::memory_order_acquire)) {
    // An epoll_wait failure here has no caller to return to; it was logged,
    // and the thread exits so that is_running() shows it.
    if (!poll_once(-1).ok()) break;
  }
  driver_.store(std::thread::id(), std::memory_order_relaxed);
  running_.store(false, std::memory_order_release);
  in_progress_.store(false, std::memory_order_release);
}

Result<size_t> EventLoop::poll_once(int timeout_ms) {
  epoll_event events[kMaxEvents];
  const int n = epoll_wait(epfd_, events, kMaxEvents, timeout_ms);
  if (n < 0) {
    if (errno == EINTR) return size_t{0};
    MC_LOG(error) << "epoll_wait(fd " << epfd_ << ") failed: " << errno_string(errno);
    return Status::IoError;
  }
  size_t calls = 0;
  for (int i = 0; i < n; ++i) {
    const uint64_t key = events[i].data.u64;
    if (key == kWakeKey) {
      drain(wakefd_, "eventfd");
    } else if (key == kTimerKey) {
      drain(timerfd_, "timerfd");
      calls += dispatch_timers();
    } else {
      calls += dispatch_fd(key, events[i].events);
    }
  }
  return calls + dispatch_posted();
}

size_t EventLoop::dispatch_fd(uint64_t key, uint32_t events) {
  std::shared_ptr<FdHandler> handler;
  {
    std::lock_guard guard(lock_);
    // Not found: removed by an earlier callback of this round, or by another
    // thread, after epoll_wait reported it.
    auto it = fd_handlers_.find(key);
    if (it == fd_handlers_.end()) return 0;
    handler = it->second;
    calling_ = key;
  }
  // `handler` keeps the callback alive even if it removes itself.
  handler->cb(handler->fd, events);
  end_call();
  return 1;
}

size_t EventLoop::dispatch_timers() {
  const uint64_t now = monotonic_ns();
  size_t calls = 0;
  for (;;) {
    std::shared_ptr<TimerCallback> cb;
    {
      std::lock_guard guard(lock_);
      // Re-read the earliest deadline each time: a callback may cancel or
      // add timers. A periodic timer is rescheduled past `now`, so the loop
      // ends.
      if (deadlines_.empty() || deadlines_.begin()->first > now) break;
      const TimerId id = deadlines_.begin()->second;
      deadlines_.erase(deadlines_.begin());
      auto it = timers_.find(id);
      Timer& t = it->second;
      cb = t.cb;
      if (t.oneshot) {
        timers_.erase(it);
      } else {
        const auto ns = static_cast<uint64_t>(t.interval.count());
        uint64_t next = t.deadline_ns + ns;
        if (next <= now) next = now + ns;  // fell behind: skip missed expirations
        t.deadline_ns = next;
        deadlines_.emplace(next, id);
      }
      calling_ = id;
    }
    (*cb)();
    end_call();
    ++calls;
  }
  std::lock_guard guard(lock_);
  (void)arm_timer_locked();
  return calls;
}

size_t EventLoop::dispatch_posted() {
  // The common round: no lock, no deque to make and free. A function posted
  // after this look wakes the loop for the next round.
  if (!has_posted_.load(std::memory_order_acquire)) return 0;
  std::unique_lock guard(lock_);
  has_posted_.store(false, std::memory_order_relaxed);
  std::deque<std::function<void()>> batch;
  batch.swap(posted_);
  guard.unlock();
  // Functions posted while these run wait for the next round (the eventfd
  // was written for them), so a self-reposting function cannot starve fds.
  for (auto& fn : batch) fn();
  return batch.size();
}

void EventLoop::end_call() {
  {
    std::lock_guard guard(lock_);
    calling_ = 0;
  }
  call_done_.notify_all();
}

void EventLoop::wait_not_in_call(std::unique_lock<std::mutex>& guard, uint64_t key) {
  if (in_loop_thread()) return;  // the caller is that callback, or runs between callbacks
  call_done_.wait(guard, [&] { return calling_ != key; });
}

Status EventLoop::arm_timer_locked() {
  itimerspec spec{};  // all zero: disarm
  if (!deadlines_.empty()) {
    const uint64_t deadline = deadlines_.begin()->first;
    spec.it_value.tv_sec = static_cast<time_t>(deadline / 1000000000ull);
    spec.it_value.tv_nsec = static_cast<long>(deadline % 1000000000ull);
  }
  if (timerfd_settime(timerfd_, TFD_TIMER_ABSTIME, &spec, nullptr) != 0) {
    MC_LOG(error) << "timerfd_settime(fd " << timerfd_ << ") failed: " << errno_string(errno);
    return Status::IoError;
  }
  return Status::Ok;
}

Status EventLoop::wake() {
  const uint64_t one = 1;
  if (write(wakefd_, &one, sizeof(one)) < 0 && errno != EAGAIN) {
    MC_LOG(error) << "write(eventfd " << wakefd_ << ") failed: " << errno_string(errno);
    return Status::IoError;
  }
  return Status::Ok;
}

}  // namespace mc::ucs
