// SPDX-License-Identifier: Apache-2.0
// TcpListener: the accepting side of a tcp iface. Its listening socket on
// the iface's loop; accept() that pauses instead of spinning when the
// process is out of descriptors or memory; and the connections accepted
// that have not said hello yet, each given MC_TCP_ACCEPT_TIMEOUT to do so,
// at most MC_TCP_MAX_PENDING_ACCEPTS of them (a new one closes the oldest).
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "ucs/async/event_loop.h"
#include "ucs/log/rate_limiter.h"
#include "uct/tcp/tcp_conn.h"

namespace mc::uct::tcp {

/// Thread safety: the callbacks run on the loop thread and take `lock` (the
/// iface's, which guards TcpConn::hello_seen); stop() may be called from
/// any thread without it.
class TcpListener {
 public:
  struct Params {
    std::chrono::nanoseconds hello_timeout;  ///< MC_TCP_ACCEPT_TIMEOUT
    size_t max_pending;                      ///< MC_TCP_MAX_PENDING_ACCEPTS
    /// How long accepting pauses after a failure that retrying at once would repeat.
    std::chrono::nanoseconds backoff = std::chrono::milliseconds(100);
  };
  /// Makes a watched connection of an accepted socket (which it owns from
  /// then on); null when it could not. Called without the lock.
  using Adopt = std::function<std::shared_ptr<TcpConn>(int fd)>;
  /// Closes a connection that has sent no hello and forgets it. Called with
  /// the lock held.
  using Drop = std::function<void(TcpConn& conn)>;

  /// Takes `fd`, a non-blocking listening socket; `where` ("ip:port") names
  /// it in the log.
  TcpListener(ucs::EventLoop* loop, std::mutex* lock, int fd, std::string where,
              const Params& params, Adopt adopt, Drop drop);
  /// Closes the socket; stop() first.
  ~TcpListener();
  TcpListener(const TcpListener&) = delete;
  TcpListener& operator=(const TcpListener&) = delete;

  /// Starts watching the socket.
  Status start();
  /// For good: no accept and no timer of the listener starts after it. A
  /// timer callback in flight may still be returning: the owner waits for
  /// the loop (a barrier) before destroying the listener.
  void stop();

 private:
  void on_ready();
  /// Stops watching the socket for params_.backoff after accept failed with `err`.
  void pause(int err);
  void resume();
  void track_locked(std::shared_ptr<TcpConn> conn);
  /// Closes the connections whose hello is overdue; re-arms the timer.
  void sweep();
  void arm_sweep_locked(uint64_t now);

  struct Pending {
    uint64_t deadline_ns;
    std::weak_ptr<TcpConn> conn;
  };

  ucs::EventLoop* loop_;
  std::mutex* lock_;
  int fd_;
  std::string where_;
  Params params_;
  Adopt adopt_;
  Drop drop_;

  // Guarded by *lock_.
  bool closing_ = false;
  uint64_t resume_timer_ = 0;    ///< armed while paused
  uint64_t sweep_timer_ = 0;     ///< armed while pending_ is not empty
  std::deque<Pending> pending_;  ///< accepted, no hello yet (or gone since), oldest first

  // The loop thread only.
  uint64_t failed_ = 0;  ///< failed accepts since the last one that worked
  ucs::RateLimiter accept_log_;
  ucs::RateLimiter drop_log_;
};

}  // namespace mc::uct::tcp
