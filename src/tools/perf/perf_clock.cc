// SPDX-License-Identifier: Apache-2.0
// Clock calibration.
#include "tools/perf/perf_clock.h"

#include <fstream>
#include <sstream>
#include <thread>

namespace mc::perf {

namespace detail {
bool g_use_tsc = false;
}

namespace {

double g_ticks_per_second = 1e9;

// The TSC counts at a fixed rate across frequency changes and idle states
// only when the CPU says both constant_tsc and nonstop_tsc.
bool tsc_is_invariant() {
#if defined(__x86_64__)
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line);
    bool constant = false, nonstop = false;
    for (std::string w; words >> w;) {
      constant |= w == "constant_tsc";
      nonstop |= w == "nonstop_tsc";
    }
    return constant && nonstop;
  }
#endif
  return false;
}

}  // namespace

void clock_init() {
  static const bool once = [] {
#if defined(__x86_64__)
    if (!tsc_is_invariant()) return true;
    using std::chrono::steady_clock;
    const auto t0 = steady_clock::now();
    const uint64_t c0 = __rdtsc();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    const auto t1 = steady_clock::now();
    const uint64_t c1 = __rdtsc();
    const double seconds = std::chrono::duration<double>(t1 - t0).count();
    if (seconds > 0 && c1 > c0) {
      g_ticks_per_second = static_cast<double>(c1 - c0) / seconds;
      detail::g_use_tsc = true;
    }
#endif
    return true;
  }();
  (void)once;
}

double ticks_per_second() {
  return g_ticks_per_second;
}

std::string clock_description() {
  std::ostringstream os;
  if (detail::g_use_tsc) {
    os.precision(4);
    os << "tsc at " << g_ticks_per_second / 1e9 << " GHz";
  } else {
    os << "steady_clock (ns)";
  }
  return os.str();
}

}  // namespace mc::perf
