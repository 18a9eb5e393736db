// SPDX-License-Identifier: Apache-2.0
// EventLoop: epoll over file descriptors, timers (one timerfd) and a
// cross-thread post() queue (one eventfd); on its own thread or caller-driven.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <unordered_map>
#include <utility>

#include "ucs/status/status.h"

namespace mc::ucs {

/// An epoll event loop. It runs on its own thread (start() / stop()) or is
/// driven by the caller (progress()), never both at once.
///
/// Thread safety: every method may be called from any thread, including
/// from inside a callback (the destructor excepted: not from a callback). Callbacks run on the
/// thread that drives the loop, one at a time, with no loop lock held, so they may add, modify or
/// remove any handler or timer, themselves included. Callbacks must not throw, and must not destroy
/// the loop.
///
/// Removal is synchronous: once remove_fd() or cancel_timer() returns on a
/// thread other than the one dispatching, that callback is not running and
/// will not run again (the call waits for a callback in flight to return;
/// do not hold a lock that callback needs). Called from inside a callback,
/// removal only guarantees that the handler is not called again.
class EventLoop {
 public:
  /// Called with the fd and the epoll events that fired (EPOLLIN, EPOLLOUT,
  /// EPOLLERR, EPOLLHUP, ...).
  using FdCallback = std::function<void(int fd, uint32_t events)>;
  /// Called when a timer expires.
  using TimerCallback = std::function<void()>;
  /// Names a timer for cancel_timer(); never 0.
  using TimerId = uint64_t;

  /// Creates the epoll instance, the wake-up eventfd and the timerfd. The
  /// loop is idle until start() or progress(). Returns IoError (logged with
  /// the errno text) when a system call fails.
  static Result<std::unique_ptr<EventLoop>> create();

  /// Stops and joins the loop thread if one runs, then closes the loop's own
  /// fds. Registered fds are not closed (the loop does not own them); posted
  /// functions not yet run are destroyed without being called.
  ~EventLoop();

  EventLoop(const EventLoop&) = delete;
  EventLoop& operator=(const EventLoop&) = delete;

  /// Watches `fd` for `events` (EPOLLIN, EPOLLOUT, EPOLLET, ...) and calls
  /// `cb` when they fire. The loop does not own `fd`; remove it before
  /// closing it. Returns InvalidParam for a negative fd or an empty
  /// callback, Exists when `fd` is already watched, IoError when epoll_ctl
  /// fails (logged).
  Status add_fd(int fd, uint32_t events, FdCallback cb);

  /// Changes the events watched on `fd`. Returns NoElem when `fd` is not
  /// watched, IoError when epoll_ctl fails (logged).
  Status modify_fd(int fd, uint32_t events);

  /// Stops watching `fd`; see the class comment for when its callback may
  /// still be running. Returns NoElem when `fd` is not watched. A failed
  /// epoll_ctl (e.g. the fd was closed first) is logged at debug level only:
  /// the handler is removed regardless.
  Status remove_fd(int fd);

  /// Calls `cb` after `interval`, then every `interval` unless `oneshot`.
  /// A periodic timer that falls behind skips the missed expirations rather
  /// than firing in a burst. Returns the timer's id, InvalidParam for a
  /// non-positive interval or an empty callback, IoError when the timerfd
  /// cannot be armed (logged).
  Result<TimerId> add_timer(std::chrono::nanoseconds interval, TimerCallback cb,
                            bool oneshot = false);

  /// Cancels a timer; see the class comment for when its callback may still
  /// be running. Returns NoElem when `id` is unknown, including a oneshot
  /// timer that has already fired (or is firing now).
  Status cancel_timer(TimerId id);

  /// Queues `fn` to run on the thread driving the loop and wakes the loop.
  /// Functions run in the order posted. Returns InvalidParam for an empty
  /// function, IoError when the eventfd cannot be written (logged; `fn`
  /// stays queued and runs at the next wake-up of the loop).
  Status post(std::function<void()> fn);

  /// Waits up to `timeout` (negative: forever, zero: poll) for events, then
  /// dispatches every ready fd, due timer and posted function once. Returns
  /// the number of callbacks run (0 on timeout or a signal), Busy when the
  /// loop runs on its own thread or another thread is in progress(), IoError
  /// when epoll_wait fails (logged).
  Result<size_t> progress(std::chrono::milliseconds timeout);
  /// How many progress() calls have waited on the loop so far. Users that
  /// share the loop and each progress it (the tcp ifaces of a worker) skip
  /// their wait when another one waited since theirs: that wait dispatched
  /// their fds too.
  uint64_t progress_count() const { return progress_count_.load(std::memory_order_relaxed); }

  /// Runs the loop on a new thread until stop(). Returns Busy when the loop
  /// already runs or another thread is in progress(), IoError when the
  /// thread cannot be created (logged).
  Status start();

  /// Stops the loop thread and joins it. Returns Ok (also when it was not
  /// running). Called from inside a callback on the loop thread, it cannot
  /// join itself: it asks the thread to exit after the current callback and
  /// returns InProgress; the next start(), stop() or the destructor joins it.
  Status stop();

  /// True while the loop thread runs: from start() until stop(), or until
  /// the thread exits by itself (stop() from a callback, or an epoll_wait
  /// failure, which is logged).
  bool is_running() const { return running_.load(std::memory_order_acquire); }

  /// True on the thread now driving the loop (its own or the one in
  /// progress()).
  bool in_loop_thread() const;

  /// The loop's epoll fd: readable while a watched fd, a due timer or a
  /// posted function waits for progress(). For a caller that sleeps in its
  /// own epoll set; never read it or close it.
  int fd() const { return epfd_; }

 private:
  struct FdHandler {
    int fd;
    FdCallback cb;
  };
  struct Timer {
    std::chrono::nanoseconds interval;
    bool oneshot;
    uint64_t deadline_ns;  ///< absolute, CLOCK_MONOTONIC
    std::shared_ptr<TimerCallback> cb;
  };

  EventLoop() = default;
  Status init();
  Result<size_t> poll_once(int timeout_ms);
  size_t dispatch_fd(uint64_t key, uint32_t events);
  size_t dispatch_timers();
  size_t dispatch_posted();
  void end_call();
  void wait_not_in_call(std::unique_lock<std::mutex>& guard, uint64_t key);
  Status arm_timer_locked();
  Status wake();
  void run();

  int epfd_ = -1;
  int wakefd_ = -1;   ///< eventfd: post() and stop() wake epoll_wait
  int timerfd_ = -1;  ///< armed to the earliest timer deadline

  // Lock order: control_lock_ (start/stop) before lock_.
  std::mutex control_lock_;  ///< serialises start() and stop()
  std::thread thread_;
  std::atomic<bool> running_{false};
  std::atomic<bool> stop_requested_{false};
  std::atomic<bool> in_progress_{false};   ///< the loop thread or a progress() drives the loop
  std::atomic<std::thread::id> driver_{};  ///< the thread driving it, for in_loop_thread()
  std::atomic<uint64_t> progress_count_{0};  ///< progress() calls that waited

  // lock_ guards everything below. Keys: each fd registration and each timer
  // gets a fresh key from next_key_; an epoll event carries the key, not the
  // fd, so an event for a removed (and maybe reused) fd is dropped.
  mutable std::mutex lock_;
  uint64_t next_key_ = kFirstKey;
  std::unordered_map<int, uint64_t> fd_keys_;
  std::unordered_map<uint64_t, std::shared_ptr<FdHandler>> fd_handlers_;
  std::unordered_map<TimerId, Timer> timers_;
  std::set<std::pair<uint64_t, TimerId>> deadlines_;  ///< (deadline_ns, id)
  std::deque<std::function<void()>> posted_;
  std::atomic<bool> has_posted_{false};  ///< posted_ is not empty (set with lock_ held)
  uint64_t calling_ = 0;  ///< key whose callback runs now, 0 when none
  std::condition_variable call_done_;

  static constexpr uint64_t kWakeKey = 1;
  static constexpr uint64_t kTimerKey = 2;
  static constexpr uint64_t kFirstKey = 16;
};

}  // namespace mc::ucs
