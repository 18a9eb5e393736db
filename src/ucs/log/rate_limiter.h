// SPDX-License-Identifier: Apache-2.0
// RateLimiter: whether a message that a peer or the system can make repeat
// fast (a failing accept, a peer's bad request) is logged now, and how many
// were held back since the last one that was.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <utility>

namespace mc::ucs {

/// At most `burst` events per `interval` are logged; the others are counted
/// and the next logged one says how many:
///
///   if (auto v = limiter_.check(); v.log) MC_LOG(warn) << "tcp: ..." << v.note();
///
/// A window opens with the first event after the last window closed, so a
/// lone event is always logged at once. Thread-safe.
class RateLimiter {
 public:
  using Clock = std::chrono::steady_clock;
  struct Verdict {
    bool log = false;         ///< log this one
    uint64_t suppressed = 0;  ///< when `log`: events held back since the last logged one
    /// " (N more since the last report)", or "" when none was held back.
    std::string note() const {
      return suppressed ? " (" + std::to_string(suppressed) + " more since the last report)" : "";
    }
  };

  explicit RateLimiter(std::chrono::nanoseconds interval = std::chrono::seconds(1),
                       uint32_t burst = 1)
      : interval_(interval), burst_(burst ? burst : 1) {}

  /// Counts one event at `now`.
  Verdict check(Clock::time_point now = Clock::now()) {
    std::lock_guard guard(lock_);
    if (!started_ || now - window_start_ >= interval_) {
      started_ = true;
      window_start_ = now;
      in_window_ = 0;
    }
    if (in_window_ >= burst_) {
      ++suppressed_;
      return {};
    }
    ++in_window_;
    return {true, std::exchange(suppressed_, 0)};
  }

 private:
  const std::chrono::nanoseconds interval_;
  const uint32_t burst_;
  std::mutex lock_;  ///< guards what follows
  Clock::time_point window_start_{};
  uint32_t in_window_ = 0;  ///< events logged in the current window
  uint64_t suppressed_ = 0;
  bool started_ = false;
};

}  // namespace mc::ucs
