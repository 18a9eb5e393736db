// SPDX-License-Identifier: Apache-2.0
// The benchmark clock: the invariant TSC on x86-64 (a few ns to read), else
// steady_clock. Read once per iteration, so its cost is part of every number.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace mc::perf {

namespace detail {
extern bool g_use_tsc;
}

/// Calibrates the clock (about 20 ms, once per process); call before now().
void clock_init();

/// Clock ticks; convert with ticks_per_second().
inline uint64_t clock_now() {
#if defined(__x86_64__)
  if (detail::g_use_tsc) return __rdtsc();
#endif
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

double ticks_per_second();

/// "tsc at 2.995 GHz" or "steady_clock (ns)", for -I.
std::string clock_description();

}  // namespace mc::perf
