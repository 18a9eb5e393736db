// SPDX-License-Identifier: Apache-2.0
// Measurement: the clock of the client side of a run. It keeps one sample
// per round trip of a ping-pong test, and one per kStreamBatch posted
// operations of a stream test (their average), for percentiles, and the
// totals ucx_perftest reports: overall, and "moment" (since the last report).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
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

/// The nearest-rank percentile (`rank` in 0..100) of `v`: the least sample
/// with at least `rank` % of the samples at or below it (p50 of 1, 2, 3, 4 is
/// 2). Reorders `v`; T{} when it is empty. Every percentile mc_perftest
/// prints is this one.
template <typename T>
T nearest_rank(std::vector<T>& v, double rank) {
  if (v.empty()) return T{};
  const double pos = std::ceil(rank / 100.0 * static_cast<double>(v.size()));
  const size_t idx = std::min(v.size() - 1, static_cast<size_t>(std::max(pos, 1.0)) - 1);
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(idx), v.end());
  return v[idx];
}

class Measurement {
 public:
  /// Called about once a second with the numbers so far (progress line).
  using ProgressFn = std::function<void(const PerfResult&)>;

  /// At most this many samples are kept; beyond it a uniform sample of
  /// them (reservoir sampling), so a long run stays within 128 MiB.
  static constexpr size_t kMaxSamples = size_t{16} << 20;
  /// A stream test reads the clock once per this many operations (as
  /// ucx_perftest's bandwidth loop does not time each one): a sample is the
  /// batch's time divided by its size. Ping-pong tests sample every round
  /// trip.
  static constexpr uint64_t kStreamBatch = 64;

  Measurement(TestType type, uint64_t iters, double percentile_rank, ProgressFn progress);

  /// Starts the clock (after the warm-up).
  void start();

  /// One iteration done, `bytes` moved. Reads the clock only when a
  /// sample is due (each iteration of a ping-pong test).
  void update(size_t bytes) {
    ++count_;
    bytes_ += bytes;
    if (--until_sample_ == 0) sample();
  }

  /// Stops the clock (after the final flush of a bandwidth test).
  void finish();

  /// The numbers of the whole run, percentiles included.
  PerfResult result() const;

  uint64_t iterations() const { return count_; }

  /// Iterations per sample: 1, or kStreamBatch for stream tests.
  uint64_t batch() const { return batch_; }

  /// The slot of the reservoir that sample number `n` (0-based, `n` >=
  /// kept) replaces for the random value `r`: uniform in [0, n] (Lemire's
  /// multiply-shift range reduction, no division); `kept` or more: none.
  static uint64_t reservoir_slot(uint64_t r, uint64_t n) {
    return static_cast<uint64_t>((static_cast<unsigned __int128>(r) * (n + 1)) >> 64);
  }

 private:
  void sample() {
    until_sample_ = batch_;
    const uint64_t now = clock_now();
    const uint64_t delta = now - last_;
    last_ = now;
    if (nsamples_ < samples_.size()) {
      samples_[nsamples_] = delta;
    } else {
      keep_sample(delta);
    }
    ++nsamples_;
    if (now >= next_report_) report(now);
  }
  void keep_sample(uint64_t delta);
  void report(uint64_t now);
  PerfResult totals(uint64_t now) const;

  const double factor_;   // 2 for ping-pong (half round trip), else 1
  const uint64_t batch_;  // iterations per sample
  const double rank_;
  ProgressFn progress_;
  std::vector<uint64_t> samples_;  // ticks per batch_ iterations
  uint64_t count_ = 0, bytes_ = 0;
  uint64_t nsamples_ = 0, until_sample_ = 0;  // samples taken; iterations to the next
  uint64_t start_ = 0, last_ = 0, end_ = 0;
  uint64_t next_report_ = UINT64_MAX, interval_ = 0;
  uint64_t prev_time_ = 0, prev_count_ = 0, prev_bytes_ = 0;  // at the last report
  uint64_t prev_samples_ = 0;
  uint64_t rng_ = 0x853c49e6748fea9bull;
};

}  // namespace mc::perf
