// SPDX-License-Identifier: Apache-2.0
// The Transfer Engine when its metadata server dies and comes back, for each
// backend (mc_metadata_server, etcd, redis; real servers from the Services
// fixture) between two processes: the open segment keeps moving data while
// the server is dead, opening an unknown segment fails within a bound, and
// after a restart (etcd with its data, redis and http empty) the target's
// live engine puts its keys again, so a fresh initiator finds it. And redis
// leases: a SIGKILLed target's keys expire after MC_ETCD_LEASE_TTL, a live
// target's stay.
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <thread>

#include "common/services.h"
#include "te/te_test_util.h"
#include "ucp/metadata/descriptors.h"
#include "ucp/metadata/store.h"
#include "uct/base/component_loader.h"

namespace mc::te::test {
namespace {

using mc::test::Service;
using mc::test::Services;
using Clock = std::chrono::steady_clock;

constexpr size_t kSize = 256 * 1024;
constexpr unsigned kSeed = 21;
constexpr auto kTimeout = std::chrono::seconds(2);  // MC_METADATA_TIMEOUT below

// Polls `done` every 100 ms; false when it is still false after `bound` (a
// hang detector far above the expected time, not a speed check).
bool wait_for(const std::function<bool()>& done, std::chrono::seconds bound) {
  const auto deadline = Clock::now() + bound;
  while (Clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return done();
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

class TeMetadataRestart : public testing::TestWithParam<Service> {
 protected:
  void SetUp() override {
    if (uct::find_component("tcp") == nullptr) GTEST_SKIP() << "tcp not available";
    url_ = services_.start(GetParam());
    ASSERT_FALSE(url_.empty());
    env_ = loopback_env("tcp", {{"MC_METADATA_TIMEOUT", "2s"},
                                {"MC_METADATA_REFRESH_INTERVAL", "300ms"},
                                {"MC_ETCD_LEASE_TTL", "3s"}});
    // For the whole test: a setenv while an engine's threads run could race
    // with a getenv of theirs.
    scoped_ = std::make_unique<ScopedEnv>(env_);
  }

  void TearDown() override { scoped_.reset(); }

  std::unique_ptr<TransferEngine> make_engine() {
    auto engine = std::make_unique<TransferEngine>();
    EXPECT_EQ(engine->init(url_, free_segment_name()), 0);
    return engine;
  }

  Services services_;
  std::string url_;
  std::map<std::string, std::string> env_;
  std::unique_ptr<ScopedEnv> scoped_;
};

TEST_P(TeMetadataRestart, KilledServerOpenSegmentsGoOnRestartedTargetIsFoundAgain) {
  TargetProcess target;
  ASSERT_TRUE(target.start(url_, free_segment_name(), kSize, kSeed, env_));
  auto engine = make_engine();
  const SegmentHandle seg = engine->openSegment(target.segment());
  ASSERT_GE(seg, 0);
  std::vector<uint8_t> local(kSize);
  ASSERT_EQ(engine->registerLocalMemory(local.data(), local.size()), 0);
  auto r = run_batch(*engine, {{TransferRequest::READ, local.data(), seg, target.addr(), 4096}});
  ASSERT_EQ(r.size(), 1u);
  ASSERT_EQ(r[0].s, COMPLETED);

  services_.kill(GetParam());
  // The open segment's endpoint needs no store: whole reads and writes go on.
  r = run_batch(*engine, {{TransferRequest::READ, local.data(), seg, target.addr(), kSize}});
  ASSERT_EQ(r.size(), 1u);
  ASSERT_EQ(r[0].s, COMPLETED);
  for (size_t i = 0; i < kSize; ++i) ASSERT_EQ(local[i], pattern(kSeed, i)) << i;
  for (size_t i = 0; i < kSize; ++i) local[i] = pattern(5, i);
  r = run_batch(*engine, {{TransferRequest::WRITE, local.data(), seg, target.addr(), kSize}});
  ASSERT_EQ(r.size(), 1u);
  ASSERT_EQ(r[0].s, COMPLETED);
  // An unknown segment fails, within the request bound (twice: the
  // initiator's own refresher may hold the connection for one request).
  const auto t0 = Clock::now();
  EXPECT_LT(engine->openSegment(free_segment_name()), 0);
  EXPECT_LT(Clock::now() - t0, 2 * kTimeout + std::chrono::seconds(2));
  // Re-opening the open segment keeps its descriptor.
  EXPECT_EQ(engine->openSegment(target.segment()), seg);
  // The target notices the outage and says so.
  ASSERT_TRUE(
      wait_for([&] { return count(target.log(), "is unreachable") > 0; }, std::chrono::seconds(30)))
      << target.log();

  ASSERT_TRUE(services_.restart(GetParam()));
  // A fresh initiator finds the target once it has put its keys again.
  auto fresh = make_engine();
  SegmentHandle seg2 = -1;
  EXPECT_TRUE(wait_for(
      [&] {
        seg2 = fresh->openSegment(target.segment());
        return seg2 >= 0;
      },
      std::chrono::seconds(30)))
      << target.log();
  ASSERT_GE(seg2, 0);
  std::vector<uint8_t> other(kSize);
  ASSERT_EQ(fresh->registerLocalMemory(other.data(), other.size()), 0);
  r = run_batch(*fresh, {{TransferRequest::READ, other.data(), seg2, target.addr(), kSize}});
  ASSERT_EQ(r.size(), 1u);
  ASSERT_EQ(r[0].s, COMPLETED);
  for (size_t i = 0; i < kSize; ++i) ASSERT_EQ(other[i], pattern(5, i)) << i;
  // Both keys are back, and the outage and the recovery were logged once.
  {
    std::string error;
    auto store = metadata::open_store(url_, metadata::StoreOptions{}, &error);
    ASSERT_TRUE(store.ok()) << error;
    EXPECT_TRUE((*store)->get(metadata::rpc_meta_key("mooncake", target.segment())).ok());
    EXPECT_TRUE((*store)->get(metadata::ram_key("mooncake", target.segment())).ok());
  }
  EXPECT_TRUE(wait_for([&] { return count(target.log(), "is reachable again") > 0; },
                       std::chrono::seconds(30)))
      << target.log();
  EXPECT_EQ(count(target.log(), "is unreachable"), 1u) << target.log();
  EXPECT_EQ(count(target.log(), "is reachable again; re-published"), 1u) << target.log();
  // The first initiator still moves data.
  r = run_batch(*engine, {{TransferRequest::READ, local.data(), seg, target.addr(), kSize}});
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].s, COMPLETED);
  EXPECT_EQ(target.stop(), 0) << target.log();
}

INSTANTIATE_TEST_SUITE_P(All, TeMetadataRestart,
                         testing::Values(Service::MetadataServer, Service::Etcd, Service::Redis),
                         [](const auto& info) { return mc::test::service_name(info.param); });

TEST(TeRedisLease, CrashedTargetsKeysExpireLiveTargetsStay) {
  if (uct::find_component("tcp") == nullptr) GTEST_SKIP() << "tcp not available";
  Services services;
  const std::string url = services.start_redis();
  ASSERT_FALSE(url.empty());
  const std::map<std::string, std::string> env = {
      {"MC_TLS", "tcp"}, {"MC_NET_DEVICES", "lo"}, {"MC_ETCD_LEASE_TTL", "2s"}};
  TargetProcess live, crashed;
  ASSERT_TRUE(live.start(url, free_segment_name(), 4096, 1, env));
  ASSERT_TRUE(crashed.start(url, free_segment_name(), 4096, 2, env));
  ScopedEnv scoped(env);
  std::string error;
  auto opened = metadata::open_store(url, metadata::StoreOptions{}, &error);
  ASSERT_TRUE(opened.ok()) << error;
  metadata::Store& store = **opened;
  const std::string ram = metadata::ram_key("mooncake", crashed.segment());
  const std::string rpc = metadata::rpc_meta_key("mooncake", crashed.segment());
  ASSERT_TRUE(store.get(ram).ok());
  ASSERT_TRUE(store.get(rpc).ok());
  crashed.kill();  // no clean-up: only the expiry can remove the keys
  EXPECT_TRUE(wait_for([&] { return store.get(ram).status() == ucs::Status::NoElem; },
                       std::chrono::seconds(30)))
      << "the ram key outlived its TTL";
  EXPECT_TRUE(wait_for([&] { return store.get(rpc).status() == ucs::Status::NoElem; },
                       std::chrono::seconds(30)))
      << "the rpc_meta key outlived its TTL";
  // Three TTLs on, the live target's keys are still there: its store sets
  // them again with a fresh expiry.
  const auto until = Clock::now() + std::chrono::seconds(6);
  while (Clock::now() < until) {
    ASSERT_TRUE(store.get(metadata::ram_key("mooncake", live.segment())).ok()) << live.log();
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  TransferEngine engine;
  ASSERT_EQ(engine.init(url, "127.0.0.1"), 0);
  EXPECT_LT(engine.openSegment(crashed.segment()), 0);
  EXPECT_GE(engine.openSegment(live.segment()), 0);
}

}  // namespace
}  // namespace mc::te::test
