// SPDX-License-Identifier: Apache-2.0
// Watchdog: bounds every wait of a test. A wait loop calls check() on each
// spin; it fails when the test stops progressing for the timeout, when the
// peer's control connection closes (the peer died), or when the transport
// reported a failure. A run therefore ends in bounded time, never hangs.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "tools/perf/perf_rte.h"

namespace mc::perf {

class Watchdog {
 public:
  /// `rte` may be null (nothing to watch); a negative `timeout` means none.
  Watchdog(Rte* rte, Duration timeout) : rte_(rte), timeout_(timeout) {}

  /// For every spin of a wait loop. `mark` is any counter that moves while
  /// the test makes progress; when it stands still for the timeout, Timeout.
  /// Also ConnectionReset / Rejected when the peer died or gave up, or the
  /// transport's failure. Reads the clock only once every kSpins calls.
  Status check(uint64_t mark) {
    if (++spins_ % kSpins != 0) return Status::Ok;
    return check_slow(mark, true);
  }

  /// As check(), without the inactivity limit: for a side that only waits
  /// while its peer works (a server under one-sided puts sees no events).
  Status check_peer() {
    if (++spins_ % kSpins != 0) return Status::Ok;
    return check_slow(0, false);
  }

  /// Restarts the inactivity clock (at the start of a phase).
  void rearm() { last_move_ = std::chrono::steady_clock::now(); }

  /// Records a failure reported by the transport (its error handler); the
  /// next check() returns it. The first failure wins.
  void fail(Status status, const std::string& why);

  /// Whether fail() was called.
  bool failed() const { return failure_ != Status::Ok; }

 private:
  static constexpr uint64_t kSpins = 1024;

  Status check_slow(uint64_t mark, bool limit);

  Rte* rte_;
  Duration timeout_;
  uint64_t spins_ = 0;
  uint64_t last_mark_ = 0;
  std::chrono::steady_clock::time_point last_move_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point next_peer_check_{};
  Status failure_ = Status::Ok;
};

}  // namespace mc::perf
