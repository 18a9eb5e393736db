// SPDX-License-Identifier: Apache-2.0
// mc_perftest's Measurement: one clock sample per round trip of a ping-pong
// test, one per Measurement::kStreamBatch operations of a stream test, and
// the reservoir's range reduction.
#include <gtest/gtest.h>

#include <vector>

#include "tools/perf/perf_clock.h"
#include "tools/perf/perf_measure.h"

namespace mc::perf {
namespace {

class PerfMeasure : public ::testing::Test {
 protected:
  void SetUp() override { clock_init(); }

  // A measured run of `iters` 8-byte operations of `type`; its batch in
  // *batch.
  static PerfResult run(TestType type, uint64_t iters, uint64_t* batch = nullptr) {
    Measurement m(type, iters, 50.0, nullptr);
    if (batch) *batch = m.batch();
    m.start();
    for (uint64_t i = 0; i < iters; ++i) m.update(8);
    m.finish();
    return m.result();
  }
};

TEST_F(PerfMeasure, PingPongSamplesEveryIteration) {
  uint64_t batch = 0;
  const PerfResult r = run(TestType::PingPong, 100, &batch);
  EXPECT_EQ(batch, 1u);
  EXPECT_EQ(r.iters, 100u);
  EXPECT_EQ(r.bytes, 800u);
  EXPECT_EQ(r.samples, 100u);
  EXPECT_LE(r.lat_min, r.lat_p50);
  EXPECT_LE(r.lat_p50, r.lat_max);
}

TEST_F(PerfMeasure, StreamSamplesEveryBatch) {
  const uint64_t batch = Measurement::kStreamBatch;
  const uint64_t iters = 10 * batch + batch / 2;
  uint64_t used = 0;
  const PerfResult r = run(TestType::Stream, iters, &used);
  EXPECT_EQ(used, batch);
  EXPECT_EQ(r.iters, iters);
  EXPECT_EQ(r.bytes, 8 * iters);
  EXPECT_EQ(r.samples, 10u);  // whole batches only
  EXPECT_GT(r.mr_total, 0);
  // A sample is a batch's time per operation: none exceeds the whole run.
  EXPECT_LE(r.lat_max * static_cast<double>(batch), r.elapsed);
}

TEST_F(PerfMeasure, StreamShorterThanBatchKeepsOneSample) {
  const PerfResult r = run(TestType::Stream, 5);
  EXPECT_EQ(r.iters, 5u);
  EXPECT_EQ(r.samples, 1u);
  EXPECT_GE(r.lat_p50, 0);
}

TEST_F(PerfMeasure, ReservoirSlotIsUniformInRange) {
  // The range reduction maps the whole 64-bit range onto [0, n] evenly.
  EXPECT_EQ(Measurement::reservoir_slot(0, 9), 0u);
  EXPECT_EQ(Measurement::reservoir_slot(UINT64_MAX, 9), 9u);
  EXPECT_EQ(Measurement::reservoir_slot(UINT64_MAX, 0), 0u);
  std::vector<unsigned> hits(10);
  uint64_t x = 0x853c49e6748fea9bull;
  for (int i = 0; i < 100000; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    const uint64_t j = Measurement::reservoir_slot(x, 9);
    ASSERT_LE(j, 9u);
    ++hits[j];
  }
  for (unsigned h : hits) {
    EXPECT_GT(h, 9000u);
    EXPECT_LT(h, 11000u);
  }
}

// The one percentile rule of every column and result line mc_perftest
// prints: nearest rank, so p50 of an even count is the lower middle sample.
TEST(PerfNearestRank, IsTheLeastSampleWithRankPercentAtOrBelowIt) {
  std::vector<double> four = {4, 1, 3, 2};
  EXPECT_EQ(nearest_rank(four, 50), 2);
  EXPECT_EQ(nearest_rank(four, 0), 1);
  EXPECT_EQ(nearest_rank(four, 75), 3);
  EXPECT_EQ(nearest_rank(four, 76), 4);
  EXPECT_EQ(nearest_rank(four, 100), 4);
  std::vector<uint64_t> hundred;
  for (uint64_t i = 100; i >= 1; --i) hundred.push_back(i);
  EXPECT_EQ(nearest_rank(hundred, 99), 99u);
  EXPECT_EQ(nearest_rank(hundred, 99.9), 100u);
  EXPECT_EQ(nearest_rank(hundred, 10), 10u);
  std::vector<double> none;
  EXPECT_EQ(nearest_rank(none, 50), 0);
}

}  // namespace
}  // namespace mc::perf
