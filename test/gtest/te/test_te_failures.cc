// SPDX-License-Identifier: Apache-2.0
// The Transfer Engine when peers fail, with real target processes: a target
// stopped and then killed mid-batch, a deadline passing, a batch freed or a
// segment closed with unfinished tasks, and an endpoint store of capacity 2
// serving 5 peers, and of capacity 1 a batch interleaving 3 (SIEVE and FIFO).
#include <gtest/gtest.h>
#include <signal.h>

#include <cstring>

#include "common/log_capture.h"
#include "te/te_test_util.h"
#include "ucs/log/log.h"
#include "uct/base/component_loader.h"

namespace mc::te::test::te_failures {
namespace {

constexpr size_t kSize = 1 << 20;
constexpr unsigned kSeed = 9;

bool ended(TaskStatus s) {
  return s == COMPLETED || s == FAILED || s == TIMEOUT;
}

class TeFailures : public testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (uct::find_component(GetParam()) == nullptr) GTEST_SKIP() << GetParam() << " not available";
    env_ = {{"MC_TLS", GetParam()}, {"MC_NET_DEVICES", "lo"}, {"MC_TRANSFER_TIMEOUT", "20s"}};
  }
  std::unique_ptr<TransferEngine> make_engine(
      const std::map<std::string, std::string>& extra = {}) {
    return make_p2p_engine(env_, extra);
  }
  std::map<std::string, std::string> env_;
};

// tcp only: a stopped tcp target cannot answer, so nothing completes while
// it is stopped (sm reads a stopped process's memory through CMA).
class TeStoppedTarget : public TeFailures {};

TEST_P(TeFailures, TargetKilledMidBatchTasksEndAndOtherSegmentsGoOn) {
  TargetProcess victim, other;
  ASSERT_TRUE(victim.start("P2PHANDSHAKE", "127.0.0.1", kSize, kSeed, env_));
  ASSERT_TRUE(other.start("P2PHANDSHAKE", "127.0.0.1", kSize, kSeed + 1, env_));
  auto engine = make_engine();
  const SegmentHandle vs = engine->openSegment(victim.segment());
  const SegmentHandle os = engine->openSegment(other.segment());
  ASSERT_GE(vs, 0);
  ASSERT_GE(os, 0);
  std::vector<uint8_t> local(kSize);
  ASSERT_EQ(engine->registerLocalMemory(local.data(), local.size()), 0);
  // Warm the endpoint, then stop the target so the batch is mid-flight.
  auto warm = run_batch(*engine, {{TransferRequest::READ, local.data(), vs, victim.addr(), 4096}});
  ASSERT_EQ(warm.size(), 1u);
  ASSERT_EQ(warm[0].s, COMPLETED);
  victim.freeze();
  std::vector<TransferRequest> reqs;
  for (size_t off = 0; off < kSize; off += 65536) {
    reqs.push_back({off % 131072 ? TransferRequest::READ : TransferRequest::WRITE,
                    local.data() + off, vs, victim.addr() + off, 65536});
  }
  const BatchID batch = engine->allocateBatchID(reqs.size());
  ASSERT_EQ(engine->submitTransfer(batch, reqs), 0);
  victim.kill();
  size_t completed = 0;
  for (size_t i = 0; i < reqs.size(); ++i) {
    const TransferStatus st = wait_task(*engine, batch, i);
    ASSERT_TRUE(ended(st.s)) << "task " << i << " state " << st.s;
    EXPECT_EQ(st.transferred, st.s == COMPLETED ? reqs[i].length : 0u) << "task " << i;
    completed += st.s == COMPLETED;
    TransferStatus again{};
    ASSERT_EQ(engine->getTransferStatus(batch, i, again), 0);
    EXPECT_EQ(again.s, st.s) << "a task ends once";
  }
  if (GetParam() == "tcp") {
    EXPECT_EQ(completed, 0u) << "a stopped tcp peer completes nothing";
  }
  EXPECT_EQ(engine->freeBatchID(batch), 0);
  // The engine keeps serving the other segment.
  auto r = run_batch(*engine, {{TransferRequest::READ, local.data(), os, other.addr(), kSize}});
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].s, COMPLETED);
  for (size_t i = 0; i < kSize; ++i) ASSERT_EQ(local[i], pattern(kSeed + 1, i)) << i;
  // A new transfer to the dead segment fails, after the retries.
  auto dead = run_batch(*engine, {{TransferRequest::READ, local.data(), vs, victim.addr(), 64}});
  ASSERT_EQ(dead.size(), 1u);
  EXPECT_TRUE(dead[0].s == FAILED || dead[0].s == TIMEOUT) << dead[0].s;
  EXPECT_EQ(other.stop(), 0) << other.log();
}

TEST_P(TeStoppedTarget, UnfinishedTasksHoldTheirBatchSegmentAndBuffer) {
  TargetProcess target;
  ASSERT_TRUE(target.start("P2PHANDSHAKE", "127.0.0.1", kSize, kSeed, env_));
  auto engine = make_engine();
  const SegmentHandle seg = engine->openSegment(target.segment());
  ASSERT_GE(seg, 0);
  std::vector<uint8_t> local(4096);
  ASSERT_EQ(engine->registerLocalMemory(local.data(), local.size()), 0);
  target.freeze();
  const BatchID batch = engine->allocateBatchID(1);
  ASSERT_EQ(engine->submitTransfer(
                batch, {{TransferRequest::READ, local.data(), seg, target.addr(), 4096}}),
            0);
  TransferStatus st{};
  ASSERT_EQ(engine->getTransferStatus(batch, 0, st), 0);
  EXPECT_TRUE(st.s == WAITING || st.s == PENDING) << st.s;
  EXPECT_LT(engine->freeBatchID(batch), 0) << "unfinished task";
  EXPECT_LT(engine->closeSegment(seg), 0) << "unfinished task";
  EXPECT_LT(engine->unregisterLocalMemory(local.data()), 0) << "buffer in flight";
  target.signal(SIGCONT);
  EXPECT_EQ(wait_task(*engine, batch, 0).s, COMPLETED);
  EXPECT_EQ(local[100], pattern(kSeed, 100));
  EXPECT_EQ(engine->freeBatchID(batch), 0);
  EXPECT_EQ(engine->unregisterLocalMemory(local.data()), 0);
  EXPECT_EQ(engine->closeSegment(seg), 0);
}

TEST_P(TeStoppedTarget, DeadlinePassesTaskTimesOutThenTheEngineRecovers) {
  TargetProcess target;
  ASSERT_TRUE(target.start("P2PHANDSHAKE", "127.0.0.1", kSize, kSeed, env_));
  auto engine = make_engine({{"MC_TRANSFER_TIMEOUT", "1s"}});
  const SegmentHandle seg = engine->openSegment(target.segment());
  ASSERT_GE(seg, 0);
  std::vector<uint8_t> local(4096);
  ASSERT_EQ(engine->registerLocalMemory(local.data(), local.size()), 0);
  target.freeze();
  auto r = run_batch(*engine, {{TransferRequest::READ, local.data(), seg, target.addr(), 4096}});
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].s, TIMEOUT);
  EXPECT_EQ(r[0].transferred, 0u);
  target.signal(SIGCONT);
  r = run_batch(*engine, {{TransferRequest::READ, local.data(), seg, target.addr() + 4096, 4096}});
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].s, COMPLETED);
  EXPECT_EQ(local[0], pattern(kSeed, 4096));
}

// Peers over tcp/lo, and an engine whose endpoint store holds `capacity`
// endpoints of the parameter's type (SIEVE, FIFO).
class TeEndpointCapacity : public testing::TestWithParam<std::string> {
 protected:
  const std::map<std::string, std::string> env_ = loopback_env("tcp");

  /// The engine, or null after a failed expectation.
  std::unique_ptr<TransferEngine> capped_engine(const char* capacity) {
    auto vars = env_;
    vars["MC_MAX_EP_PER_CTX"] = capacity;
    vars["MC_ENDPOINT_STORE_TYPE"] = GetParam();
    ScopedEnv scoped(vars);
    auto engine = std::make_unique<TransferEngine>();
    EXPECT_EQ(engine->init("P2PHANDSHAKE", "127.0.0.1"), 0);
    return HasFailure() ? nullptr : std::move(engine);
  }
};

TEST_P(TeEndpointCapacity, TwoEndpointsServeFivePeers) {
  if (uct::find_component("tcp") == nullptr) GTEST_SKIP() << "tcp not available";
  TargetProcess targets[5];
  for (unsigned i = 0; i < 5; ++i) {
    ASSERT_TRUE(targets[i].start("P2PHANDSHAKE", "127.0.0.1", 65536 * 4, 20 + i, env_));
  }
  std::unique_ptr<TransferEngine> engine = capped_engine("2");
  ASSERT_NE(engine, nullptr);
  SegmentHandle segs[5];
  for (unsigned i = 0; i < 5; ++i)
    ASSERT_GE(segs[i] = engine->openSegment(targets[i].segment()), 0);
  std::vector<uint8_t> local(5 * 65536 * 4);
  ASSERT_EQ(engine->registerLocalMemory(local.data(), local.size()), 0);
  // One peer after the other, twice: each transfer opens or reuses an endpoint.
  for (int round = 0; round < 2; ++round) {
    for (unsigned i = 0; i < 5; ++i) {
      auto r = run_batch(
          *engine, {{TransferRequest::READ, local.data(), segs[i], targets[i].addr(), 65536}});
      ASSERT_EQ(r.size(), 1u);
      ASSERT_EQ(r[0].s, COMPLETED) << "peer " << i;
      for (size_t b = 0; b < 65536; ++b) ASSERT_EQ(local[b], pattern(20 + i, b)) << i << "/" << b;
      EXPECT_LE(engine->getEndpointCount(), 2u);
    }
  }
  // Five peers in turn through a store of two: no endpoint is still cached
  // when its peer's turn comes again, so every transfer opened one.
  EndpointStoreStats st;
  ASSERT_EQ(engine->getEndpointStoreStats(st), 0);
  EXPECT_EQ(st.opened, 10u);
  EXPECT_EQ(st.evicted, 8u);
  EXPECT_EQ(st.cached, 2u);
  // One batch to all five at once: evictions happen with work in flight,
  // and every task still completes with the right bytes.
  std::memset(local.data(), 0, local.size());
  std::vector<TransferRequest> reqs;
  for (unsigned i = 0; i < 5; ++i) {
    for (size_t k = 0; k < 4; ++k) {
      reqs.push_back({TransferRequest::READ, local.data() + (i * 4 + k) * 65536, segs[i],
                      targets[i].addr() + k * 65536, 65536});
    }
  }
  for (const TransferStatus& st : run_batch(*engine, reqs)) EXPECT_EQ(st.s, COMPLETED);
  for (unsigned i = 0; i < 5; ++i) {
    for (size_t b = 0; b < 4 * 65536; ++b) {
      ASSERT_EQ(local[i * 4 * 65536 + b], pattern(20 + i, b)) << "peer " << i << " byte " << b;
    }
  }
  EXPECT_LE(engine->getEndpointCount(), 2u);
  ASSERT_EQ(engine->getEndpointStoreStats(st), 0);
  EXPECT_GE(st.opened, 13u) << "peers 0-2 were not cached when the batch began";
  EXPECT_EQ(st.opened, st.cached + st.evicted + st.removed) << "each endpoint cached or taken out";
}

// A batch that interleaves three peers (task i to peer i mod 3) with one
// endpoint allowed: the engine posts it grouped by segment, so the batch
// opens one endpoint per peer and evicts two (each with its writes in
// flight), not one per task; every task completes with the right bytes.
TEST_P(TeEndpointCapacity, InterleavedBatchEvictsOncePerPeer) {
  if (uct::find_component("tcp") == nullptr) GTEST_SKIP() << "tcp not available";
  constexpr unsigned kPeers = 3, kPerPeer = 4;
  TargetProcess targets[kPeers];
  for (unsigned i = 0; i < kPeers; ++i) {
    ASSERT_TRUE(targets[i].start("P2PHANDSHAKE", "127.0.0.1", 65536 * kPerPeer, 40 + i, env_));
  }
  std::unique_ptr<TransferEngine> engine = capped_engine("1");
  ASSERT_NE(engine, nullptr);
  SegmentHandle segs[kPeers];
  for (unsigned i = 0; i < kPeers; ++i)
    ASSERT_GE(segs[i] = engine->openSegment(targets[i].segment()), 0);
  std::vector<uint8_t> local(kPeers * kPerPeer * 65536);
  ASSERT_EQ(engine->registerLocalMemory(local.data(), local.size()), 0);
  std::vector<TransferRequest> reqs;
  for (unsigned t = 0; t < kPeers * kPerPeer; ++t) {
    const unsigned peer = t % kPeers, k = t / kPeers;
    reqs.push_back({TransferRequest::READ, local.data() + t * 65536, segs[peer],
                    targets[peer].addr() + k * 65536, 65536});
  }
  std::vector<TransferStatus> done;
  size_t evicted = 0, opened = 0;
  {
    mc::test::LogCapture sink(google::GLOG_INFO);
    const ucs::LogLevel level = ucs::log_level();
    ucs::log_set_level(ucs::LogLevel::Debug);  // the endpoint store's lines
    done = run_batch(*engine, reqs);
    ucs::log_set_level(level);
    for (const std::string& line : sink.lines()) {
      evicted += line.find("endpoint store: evicting") != std::string::npos;
      opened += line.find("transfer engine: endpoint to segment") != std::string::npos;
    }
  }
  ASSERT_EQ(done.size(), reqs.size());
  for (const TransferStatus& st : done) EXPECT_EQ(st.s, COMPLETED);
  for (unsigned t = 0; t < kPeers * kPerPeer; ++t) {
    const unsigned peer = t % kPeers, k = t / kPeers;
    for (size_t b = 0; b < 65536; b += 4096) {
      ASSERT_EQ(local[t * 65536 + b], pattern(40 + peer, k * 65536 + b)) << "task " << t;
    }
  }
  EXPECT_EQ(opened, kPeers);
  EXPECT_EQ(evicted, kPeers - 1);
  EXPECT_LE(engine->getEndpointCount(), 1u);
  // The store's counters say what its log lines said.
  EndpointStoreStats st;
  ASSERT_EQ(engine->getEndpointStoreStats(st), 0);
  EXPECT_EQ(st.opened, opened);
  EXPECT_EQ(st.evicted, evicted);
  EXPECT_LE(st.evicted_busy, st.evicted);
  EXPECT_EQ(st.removed, 0u);
  EXPECT_EQ(st.cached, engine->getEndpointCount());
  EXPECT_EQ(st.draining, 0u) << "every transfer has ended";
}

INSTANTIATE_TEST_SUITE_P(Tls, TeFailures, testing::Values("tcp", "sm"),
                         [](const auto& info) { return info.param; });
INSTANTIATE_TEST_SUITE_P(Tcp, TeStoppedTarget, testing::Values("tcp"),
                         [](const auto& info) { return info.param; });
INSTANTIATE_TEST_SUITE_P(Store, TeEndpointCapacity, testing::Values("SIEVE", "FIFO"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace mc::te::test::te_failures
