// SPDX-License-Identifier: Apache-2.0
// Measurement: the clock of the client side of a run. It keeps one sample
// per iteration (round trip or posted operation) for percentiles, and the
// totals ucx_perftest reports: overall, and "moment" (since the last report).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "tools/perf/perf_clock.h"
#include "tools/perf/perf_registry.h"

namespace mc::perf {

/// What a run measured. Times in seconds, bandwidth in bytes per second.
/// Latencies of ping-pong tests are half round trips, as ucx_perftest's.
struct PerfResult {
  uint64_t iters = 0;
  uint64_t bytes = 0;
  double elapsed = 0;
  double lat_percentile = 0;  ///< at the -R rank (ucx_perftest's first latency column)
  double lat_moment = 0;      ///< average since the last report
  double lat_total = 0;       ///< average over the run
  double bw_moment = 0, bw_total = 0;
  double mr_moment = 0, mr_total = 0;
  // mc's additions, over every kept sample.
  double lat_min = 0, lat_p50 = 0, lat_p99 = 0, lat_p999 = 0, lat_max = 0;
  size_t samples = 0;
};

class Measurement {
 public:
  /// Called about once a second with the numbers so far (progress line).
  using ProgressFn = std::function<void(const PerfResult&)>;

  /// At most this many samples are kept; beyond it a uniform sample of
  /// them (reservoir sampling), so a long run stays within 128 MiB.
  static constexpr size_t kMaxSamples = size_t{16} << 20;

  Measurement(TestType type, uint64_t iters, double percentile_rank, ProgressFn progress);

  /// Starts the clock (after the warm-up).
  void start();

  /// One iteration done, `bytes` moved.
  void update(size_t bytes) {
    const uint64_t now = clock_now();
    const uint64_t delta = now - last_;
    last_ = now;
    if (count_ < samples_.size()) {
      samples_[count_] = delta;
    } else {
      keep_sample(delta);
    }
    ++count_;
    bytes_ += bytes;
    if (now >= next_report_) report(now);
  }

  /// Stops the clock (after the final flush of a bandwidth test).
  void finish();

  /// The numbers of the whole run, percentiles included.
  PerfResult result() const;

  uint64_t iterations() const { return count_; }

 private:
  void keep_sample(uint64_t delta);
  void report(uint64_t now);
  PerfResult totals(uint64_t now) const;

  const double factor_;  // 2 for ping-pong (half round trip), else 1
  const double rank_;
  ProgressFn progress_;
  std::vector<uint64_t> samples_;
  uint64_t count_ = 0, bytes_ = 0;
  uint64_t start_ = 0, last_ = 0, end_ = 0;
  uint64_t next_report_ = UINT64_MAX, interval_ = 0;
  uint64_t prev_time_ = 0, prev_count_ = 0, prev_bytes_ = 0;  // at the last report
  uint64_t rng_ = 0x853c49e6748fea9bull;
};

}  // namespace mc::perf
