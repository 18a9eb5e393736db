// SPDX-License-Identifier: Apache-2.0
// Connecting ahead of the first transfer (warmupSegment), the local devices'
// load (getNicLoadStats), and why a task ended (TransferStatus::error): two
// engines of this process over tcp (P2PHANDSHAKE).
#include <gtest/gtest.h>
#include <unistd.h>

#include "te/te_test_util.h"
#include "ucs/status/status.h"

namespace mc::te::test::te_load {
namespace {

constexpr size_t kSize = 1 << 20;
constexpr unsigned kSeed = 11;

// warmupSegment opens the endpoint before any transfer; getNicLoadStats
// counts the bytes that then cross.
TEST(TeLoad, WarmupConnectsAndTheDeviceLoadCountsTheBytes) {
  auto target = make_p2p_engine(loopback_env("tcp"));
  auto engine = make_p2p_engine(loopback_env("tcp"));
  std::vector<uint8_t> remote(kSize, 0), local(kSize, 0);
  for (size_t i = 0; i < kSize; ++i) local[i] = pattern(kSeed, i);
  ASSERT_EQ(target->registerLocalMemory(remote.data(), kSize, "cpu:0"), 0);
  ASSERT_EQ(engine->registerLocalMemory(local.data(), kSize, "cpu:0"), 0);
  const SegmentHandle seg = engine->openSegment(target->getLocalIpAndPort());
  ASSERT_GE(seg, 0);
  EXPECT_EQ(engine->getEndpointCount(), 0u) << "opened at the first transfer, or by warmup";
  std::vector<SegmentPathInfo> paths;
  ASSERT_EQ(engine->getSegmentPaths(seg, paths), 0);
  EXPECT_TRUE(paths.empty());
  ASSERT_EQ(engine->warmupSegment(seg), 0);
  EXPECT_EQ(engine->getEndpointCount(), 1u);
  ASSERT_EQ(engine->getSegmentPaths(seg, paths), 0);
  ASSERT_FALSE(paths.empty());
  EXPECT_TRUE(paths[0].healthy);
  EXPECT_EQ(engine->warmupSegment(seg), 0) << "idempotent";
  EXPECT_EQ(engine->getEndpointCount(), 1u);
  EXPECT_EQ(engine->warmupSegment(12345), static_cast<int>(ucs::Status::NoElem));

  std::vector<NicLoadStat> stats;
  ASSERT_EQ(engine->getNicLoadStats(stats), 0);
  const auto lo = [&stats]() -> const NicLoadStat* {
    for (const NicLoadStat& s : stats) {
      if (s.device_name == "tcp/lo") return &s;
    }
    return nullptr;
  };
  ASSERT_NE(lo(), nullptr) << "tcp/lo among " << stats.size() << " devices";
  EXPECT_EQ(lo()->inflight_bytes, 0u);
  EXPECT_EQ(lo()->ewma_bandwidth_bps, 0.0);
  auto w = run_batch(*engine, {{TransferRequest::WRITE, local.data(), seg,
                                reinterpret_cast<uint64_t>(remote.data()), kSize}});
  ASSERT_EQ(w[0].s, COMPLETED);
  EXPECT_EQ(remote, local);
  // The next 10 ms window after the write counts its bytes (a hang detector
  // bounds the wait, nothing is timed).
  for (int i = 0; i < 10000; ++i) {
    ASSERT_EQ(engine->getNicLoadStats(stats), 0);
    if (lo()->ewma_bandwidth_bps > 0) break;
    ::usleep(1000);
  }
  EXPECT_GT(lo()->ewma_bandwidth_bps, 0.0);
  EXPECT_EQ(lo()->inflight_bytes, 0u) << "every byte of the completed write arrived";
  TransferEngine idle;
  EXPECT_EQ(idle.getNicLoadStats(stats), -1) << "before init";
  EXPECT_EQ(idle.warmupSegment(0), static_cast<int>(ucs::Status::NoElem));
}

// TransferStatus::error says why a task did not complete.
TEST(TeTaskError, InvalidTasksSayWhy) {
  auto target = make_p2p_engine(loopback_env("tcp"));
  auto engine = make_p2p_engine(loopback_env("tcp"));
  std::vector<uint8_t> remote(4096, 0), local(4096, 1);
  ASSERT_EQ(target->registerLocalMemory(remote.data(), remote.size(), "cpu:0"), 0);
  const SegmentHandle seg = engine->openSegment(target->getLocalIpAndPort());
  ASSERT_GE(seg, 0);
  const uint64_t raddr = reinterpret_cast<uint64_t>(remote.data());
  auto st = run_batch(*engine, {{TransferRequest::WRITE, local.data(), seg, raddr + 4000, 200},
                                {TransferRequest::WRITE, local.data(), seg + 100, raddr, 8},
                                {TransferRequest::WRITE, local.data(), seg, raddr, 0},
                                {TransferRequest::WRITE, local.data(), seg, raddr, 64}});
  ASSERT_EQ(st.size(), 4u);
  EXPECT_EQ(st[0].s, INVALID);
  EXPECT_EQ(st[0].error, static_cast<int>(ucs::Status::Rejected)) << "past the remote buffer";
  EXPECT_EQ(st[1].s, INVALID);
  EXPECT_EQ(st[1].error, static_cast<int>(ucs::Status::NoElem)) << "segment not open";
  EXPECT_EQ(st[2].s, INVALID);
  EXPECT_EQ(st[2].error, static_cast<int>(ucs::Status::InvalidParam)) << "empty local range";
  EXPECT_EQ(st[3].s, COMPLETED);
  EXPECT_EQ(st[3].error, 0);
}

}  // namespace
}  // namespace mc::te::test::te_load
