// SPDX-License-Identifier: Apache-2.0
// The wait of a batch, with the GIL released: as mc_perftest's, polling
// only yields while tasks end, and once none has ended for 10 ms (a stopped
// or slow peer) sleeps a sixteenth of that quiet time, at most 1 ms. Every
// 50 ms of waiting it takes the GIL to run Python's signal handlers, so
// Ctrl-C ends a wait without a deadline.
#pragma once

#include <pybind11/pybind11.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <thread>

#include "py_error.h"

namespace mc::py {

using Clock = std::chrono::steady_clock;

/// Calls `poll()` (the number of ended tasks, or a negative status) until it
/// returns `total`. 0 then; kTimeout once `deadline` has passed first; the
/// poll's negative status. Call with the GIL released; throws
/// pybind11::error_already_set when a signal handler raised.
template <typename Poll>
int poll_until(Poll&& poll, long total, std::optional<Clock::time_point> deadline) {
  long ended_before = -1;
  Clock::time_point last_change = Clock::now(), last_signals = last_change;
  for (;;) {
    const long ended = poll();
    if (ended < 0) return static_cast<int>(ended);
    if (ended >= total) return 0;
    const Clock::time_point now = Clock::now();
    if (ended != ended_before) {
      ended_before = ended;
      last_change = now;
    }
    if (deadline && now >= *deadline) return kTimeout;
    const Clock::duration quiet = now - last_change;
    if (quiet < std::chrono::milliseconds(10)) {
      std::this_thread::yield();
      continue;
    }
    std::this_thread::sleep_for(
        std::min<Clock::duration>(quiet / 16, std::chrono::milliseconds(1)));
    if (now - last_signals >= std::chrono::milliseconds(50)) {
      last_signals = now;
      pybind11::gil_scoped_acquire gil;
      if (PyErr_CheckSignals() != 0) throw pybind11::error_already_set();
    }
  }
}

/// The deadline of a `timeout` in seconds (None: none).
inline std::optional<Clock::time_point> deadline_of(std::optional<double> timeout) {
  if (!timeout) return std::nullopt;
  if (*timeout < 0)
    throw StatusError{kInvalidParam, "timeout " + std::to_string(*timeout) + " s is negative"};
  return Clock::now() +
         std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(*timeout));
}

}  // namespace mc::py
