// SPDX-License-Identifier: Apache-2.0
// Topology-aware path choice of the Transfer Engine between two processes
// over two tcp rails (loopback and a second network device): with both
// priority matrices preferring the second device for cpu:0, every byte of
// cpu:0 -> cpu:0 transfers goes over it, getSegmentPaths and the log say
// so; with no matrix entry for either buffer's location, both rails carry.
#include <gtest/gtest.h>

#include <cstring>
#include <mutex>

#include "common/log_capture.h"
#include "common/net_util.h"
#include "te/te_test_util.h"
#include "ucs/log/log.h"
#include "uct/base/component_loader.h"

namespace mc::te::test::te_paths {
namespace {

constexpr size_t kSize = size_t{4} << 20;
constexpr size_t kBlock = size_t{1} << 20;
constexpr unsigned kSeed = 11;

class TePaths : public testing::Test {
 protected:
  void SetUp() override {
    if (!uct::find_component("tcp")) GTEST_SKIP() << "tcp transport is not available";
    in_addr addr{};
    if (!mc::test::second_device(&dev_, &addr)) GTEST_SKIP() << "no second network device is up";
    env_ = {{"MC_TLS", "tcp"},
            {"MC_NET_DEVICES", "lo," + dev_},
            {"MC_LOOPBACK_RAILS", "2"},  // two rails, though the peer is in this namespace
            {"MC_TRANSFER_TIMEOUT", "30s"},
            {"MC_TOPO_PRIORITY_MATRIX", "cpu:0=" + dev_}};
  }

  // Reads the target's buffer, writes it back with another pattern and reads
  // that back, in 1 MiB tasks (multi-rail size) from `local` (at `location_`).
  void round_trip(TransferEngine& engine, SegmentHandle seg, uint64_t addr, unsigned seed) {
    std::vector<uint8_t> local(kSize, 0);
    ASSERT_EQ(engine.registerLocalMemory(local.data(), kSize, location_), 0);
    auto batch = [&](TransferRequest::OpCode op) {
      std::vector<TransferRequest> reqs;
      for (size_t off = 0; off < kSize; off += kBlock) {
        reqs.push_back({op, local.data() + off, seg, addr + off, kBlock});
      }
      for (const TransferStatus& st : run_batch(engine, reqs)) EXPECT_EQ(st.s, COMPLETED);
    };
    batch(TransferRequest::READ);
    for (size_t i = 0; i < kSize; ++i) ASSERT_EQ(local[i], pattern(seed, i)) << "byte " << i;
    for (size_t i = 0; i < kSize; ++i) local[i] = pattern(seed + 1, i);
    batch(TransferRequest::WRITE);
    std::memset(local.data(), 0, kSize);
    batch(TransferRequest::READ);
    for (size_t i = 0; i < kSize; ++i) ASSERT_EQ(local[i], pattern(seed + 1, i)) << "byte " << i;
    ASSERT_EQ(engine.getSegmentPaths(seg, paths_, local.data(), addr), 0);
    EXPECT_EQ(engine.unregisterLocalMemory(local.data()), 0);
  }

  // A target process at `location`, an engine with env_ and `extra`, the
  // round trip to the target, and the target stopped; the paths in paths_.
  void round_trip_to(const std::string& location,
                     const std::map<std::string, std::string>& extra = {}) {
    TargetProcess target;
    ASSERT_TRUE(target.start("P2PHANDSHAKE", "127.0.0.1", kSize, kSeed, env_, false,
                             {"--location", location}));
    location_ = location;
    std::unique_ptr<TransferEngine> engine;
    {
      std::map<std::string, std::string> env = env_;
      for (const auto& [k, v] : extra) env[k] = v;
      ScopedEnv scoped(env);
      engine = std::make_unique<TransferEngine>();
      ASSERT_EQ(engine->init("P2PHANDSHAKE", "127.0.0.1"), 0);
    }
    const SegmentHandle seg = engine->openSegment(target.segment());
    ASSERT_GE(seg, 0);
    round_trip(*engine, seg, target.addr(), kSeed);
    EXPECT_EQ(target.stop(), 0) << target.log();
  }

  std::string dev_;
  std::string location_ = "cpu:0";
  std::map<std::string, std::string> env_;
  std::vector<SegmentPathInfo> paths_;
};

TEST_F(TePaths, PreferredNicOfBothSidesCarriesEveryByte) {
  mc::test::LogCapture sink(google::GLOG_INFO);
  const ucs::LogLevel level = ucs::log_level();
  ucs::log_set_level(ucs::LogLevel::Info);
  round_trip_to("cpu:0");
  ASSERT_FALSE(HasFatalFailure());
  ucs::log_set_level(level);

  ASSERT_EQ(paths_.size(), 2u);
  EXPECT_EQ(paths_[0].local_device, "tcp/" + dev_);
  EXPECT_EQ(paths_[0].remote_device, "tcp/" + dev_);
  EXPECT_EQ(paths_[0].rank, 0);
  EXPECT_TRUE(paths_[0].carries);
  EXPECT_EQ(paths_[0].bytes, 3 * kSize) << "read, write, read of the whole buffer";
  EXPECT_EQ(paths_[1].local_device, "tcp/lo");
  EXPECT_EQ(paths_[1].rank, 4);
  EXPECT_FALSE(paths_[1].carries);
  EXPECT_EQ(paths_[1].bytes, 0u);
  const std::string log = sink.text();
  EXPECT_NE(log.find("for cpu:0 -> cpu:0 memory: tcp/" + dev_ + " -> tcp/" + dev_ +
                     " (rank 0, carries), tcp/lo -> tcp/lo (rank 4, stand-by)"),
            std::string::npos)
      << log;
}

TEST_F(TePaths, WithoutMatrixEntriesBothRailsCarry) {
  round_trip_to("cpu:9");
  ASSERT_FALSE(HasFatalFailure());
  ASSERT_EQ(paths_.size(), 2u);
  for (const SegmentPathInfo& p : paths_) {
    EXPECT_EQ(p.rank, 0) << p.local_device;
    EXPECT_TRUE(p.carries) << p.local_device;
    EXPECT_GT(p.bytes, 0u) << p.local_device;
  }
  EXPECT_EQ(paths_[0].bytes + paths_[1].bytes, 3 * kSize);
}

// MC_PATH_ROUNDROBIN: the same preference (the matrix prefers the second
// device) still ranks the paths, but every healthy one carries.
TEST_F(TePaths, PathRoundRobinLetsEveryHealthyRailCarry) {
  round_trip_to("cpu:0", {{"MC_PATH_ROUNDROBIN", "y"}});
  ASSERT_FALSE(HasFatalFailure());
  ASSERT_EQ(paths_.size(), 2u);
  EXPECT_EQ(paths_[0].local_device, "tcp/" + dev_);
  EXPECT_EQ(paths_[0].rank, 0);
  EXPECT_EQ(paths_[1].rank, 4);
  for (const SegmentPathInfo& p : paths_) {
    EXPECT_TRUE(p.carries) << p.local_device;
    EXPECT_GT(p.bytes, 0u) << p.local_device;
  }
  EXPECT_EQ(paths_[0].bytes + paths_[1].bytes, 3 * kSize);
}

// MC_ENABLE_DEST_DEVICE_AFFINITY: ranks become 2 x rank + (0 when the remote
// device has the local device's name, else 1). Both tcp paths pair
// same-name devices (lo does not reach the other device), so each gets the
// even rank and the preferred device still carries alone.
TEST_F(TePaths, DestDeviceAffinityRanksSameNamePathsEven) {
  round_trip_to("cpu:0", {{"MC_ENABLE_DEST_DEVICE_AFFINITY", "y"}});
  ASSERT_FALSE(HasFatalFailure());
  ASSERT_EQ(paths_.size(), 2u);
  EXPECT_EQ(paths_[0].local_device, "tcp/" + dev_);
  EXPECT_EQ(paths_[0].rank, 0);
  EXPECT_TRUE(paths_[0].carries);
  EXPECT_EQ(paths_[1].local_device, "tcp/lo");
  EXPECT_EQ(paths_[1].rank, 8) << "2 x 4, the names match";
  EXPECT_FALSE(paths_[1].carries);
}

}  // namespace
}  // namespace mc::te::test::te_paths
