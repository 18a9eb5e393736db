// SPDX-License-Identifier: Apache-2.0
// The Transfer Engine when peers fail, with real target processes: a target
// stopped and then killed mid-batch, a deadline passing, a batch freed or a
// segment closed with unfinished tasks, and an endpoint store of capacity 2
// serving 5 peers (SIEVE and FIFO).
#include <gtest/gtest.h>
#include <signal.h>

#include <cstring>

#include "te/te_test_util.h"
#include "uct/base/component_loader.h"

namespace mc::te::test {
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

class TeEndpointCapacity : public testing::TestWithParam<std::string> {};

TEST_P(TeEndpointCapacity, TwoEndpointsServeFivePeers) {
  if (uct::find_component("tcp") == nullptr) GTEST_SKIP() << "tcp not available";
  const std::map<std::string, std::string> env = {
      {"MC_TLS", "tcp"}, {"MC_NET_DEVICES", "lo"}, {"MC_TRANSFER_TIMEOUT", "30s"}};
  TargetProcess targets[5];
  for (unsigned i = 0; i < 5; ++i) {
    ASSERT_TRUE(targets[i].start("P2PHANDSHAKE", "127.0.0.1", 65536 * 4, 20 + i, env));
  }
  auto vars = env;
  vars["MC_MAX_EP_PER_CTX"] = "2";
  vars["MC_ENDPOINT_STORE_TYPE"] = GetParam();
  std::unique_ptr<TransferEngine> engine;
  {
    ScopedEnv scoped(vars);
    engine = std::make_unique<TransferEngine>();
    ASSERT_EQ(engine->init("P2PHANDSHAKE", "127.0.0.1"), 0);
  }
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
}

INSTANTIATE_TEST_SUITE_P(Tls, TeFailures, testing::Values("tcp", "sm"),
                         [](const auto& info) { return info.param; });
INSTANTIATE_TEST_SUITE_P(Tcp, TeStoppedTarget, testing::Values("tcp"),
                         [](const auto& info) { return info.param; });
INSTANTIATE_TEST_SUITE_P(Store, TeEndpointCapacity, testing::Values("SIEVE", "FIFO"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace mc::te::test
