// SPDX-License-Identifier: Apache-2.0
// Measurement: totals, moments and percentiles.
#include "tools/perf/perf_measure.h"

#include <algorithm>
#include <cmath>

namespace mc::perf {

Measurement::Measurement(TestType type, uint64_t iters, double percentile_rank, ProgressFn progress)
    : factor_(type == TestType::PingPong ? 2.0 : 1.0),
      batch_(type == TestType::Stream ? kStreamBatch : 1),
      rank_(percentile_rank),
      progress_(std::move(progress)) {
  // Touch the samples now, not during the run.
  samples_.resize(std::min<uint64_t>(iters / batch_ + 1, kMaxSamples));
}

void Measurement::start() {
  start_ = last_ = prev_time_ = clock_now();
  until_sample_ = batch_;
  interval_ = static_cast<uint64_t>(ticks_per_second());
  next_report_ = progress_ ? start_ + interval_ : UINT64_MAX;
}

void Measurement::finish() {
  end_ = clock_now();
  // A run shorter than one batch still gets a sample: its part of a batch,
  // scaled to a whole one.
  const uint64_t partial = batch_ - until_sample_;
  if (nsamples_ == 0 && partial > 0 && partial < batch_ && !samples_.empty()) {
    samples_[0] = (end_ - last_) * batch_ / partial;
    nsamples_ = 1;
  }
}

void Measurement::keep_sample(uint64_t delta) {
  rng_ ^= rng_ << 13;
  rng_ ^= rng_ >> 7;
  rng_ ^= rng_ << 17;
  const uint64_t j = reservoir_slot(rng_, nsamples_);
  if (j < samples_.size()) samples_[j] = delta;
}

PerfResult Measurement::totals(uint64_t now) const {
  const double tps = ticks_per_second();
  PerfResult r;
  r.iters = count_;
  r.bytes = bytes_;
  r.elapsed = static_cast<double>(now - start_) / tps;
  const double moment = static_cast<double>(now - prev_time_) / tps;
  const uint64_t d_iters = count_ - prev_count_;
  const uint64_t d_bytes = bytes_ - prev_bytes_;
  if (count_ > 0) r.lat_total = r.elapsed / static_cast<double>(count_) / factor_;
  if (d_iters > 0) r.lat_moment = moment / static_cast<double>(d_iters) / factor_;
  if (r.elapsed > 0) {
    r.bw_total = static_cast<double>(bytes_) / r.elapsed;
    r.mr_total = static_cast<double>(count_) / r.elapsed;
  }
  if (moment > 0) {
    r.bw_moment = static_cast<double>(d_bytes) / moment;
    r.mr_moment = static_cast<double>(d_iters) / moment;
  }
  return r;
}

void Measurement::report(uint64_t now) {
  PerfResult r = totals(now);
  // The percentile of this interval's samples (ucx_perftest: of recent ones).
  const uint64_t first = std::min<uint64_t>(prev_samples_, samples_.size());
  const uint64_t last = std::min<uint64_t>(nsamples_, samples_.size());
  if (last > first) {
    std::vector<uint64_t> recent(samples_.begin() + static_cast<ptrdiff_t>(first),
                                 samples_.begin() + static_cast<ptrdiff_t>(last));
    r.lat_percentile = static_cast<double>(nearest_rank(recent, rank_)) / ticks_per_second() /
                       factor_ / static_cast<double>(batch_);
  } else {
    r.lat_percentile = r.lat_moment;
  }
  progress_(r);
  prev_time_ = now;
  prev_count_ = count_;
  prev_bytes_ = bytes_;
  prev_samples_ = nsamples_;
  // Reporting took time: the next interval starts after it.
  last_ = clock_now();
  next_report_ = last_ + interval_;
}

PerfResult Measurement::result() const {
  PerfResult r = totals(end_ ? end_ : last_);
  std::vector<uint64_t> v(
      samples_.begin(),
      samples_.begin() + static_cast<ptrdiff_t>(std::min<uint64_t>(nsamples_, samples_.size())));
  r.samples = v.size();
  if (v.empty()) return r;
  const double scale = 1.0 / ticks_per_second() / factor_ / static_cast<double>(batch_);
  const auto [mn, mx] = std::minmax_element(v.begin(), v.end());
  r.lat_min = static_cast<double>(*mn) * scale;
  r.lat_max = static_cast<double>(*mx) * scale;
  r.lat_percentile = static_cast<double>(nearest_rank(v, rank_)) * scale;
  r.lat_p50 = static_cast<double>(nearest_rank(v, 50.0)) * scale;
  r.lat_p99 = static_cast<double>(nearest_rank(v, 99.0)) * scale;
  r.lat_p999 = static_cast<double>(nearest_rank(v, 99.9)) * scale;
  return r;
}

}  // namespace mc::perf
