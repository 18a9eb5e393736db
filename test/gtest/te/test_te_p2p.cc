// SPDX-License-Identifier: Apache-2.0
// The Transfer Engine between two real processes through P2PHANDSHAKE, over
// tcp and over sm: a target process (the example's target role) serves a
// buffer with a known pattern; this process's engine reads it, writes and
// reads back, and checks every rule of the API's semantics.
#include <gtest/gtest.h>
#include <signal.h>
#include <time.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "te/te_test_util.h"
#include "ucs/sys/sys.h"
#include "uct/base/component_loader.h"

namespace mc::te::test {
namespace {

constexpr size_t kTargetSize = 1 << 20;
constexpr unsigned kSeed = 5;

class TeP2p : public testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (uct::find_component(GetParam()) == nullptr) {
      GTEST_SKIP() << GetParam() << " transport is not available";
    }
    env_ = loopback_env(GetParam());
  }

  // The engine of this process, after the environment is set.
  std::unique_ptr<TransferEngine> make_engine(
      const std::map<std::string, std::string>& extra = {}) {
    return make_p2p_engine(env_, extra);
  }

  bool start_target(TargetProcess& t, bool c_api = false) {
    return t.start("P2PHANDSHAKE", "127.0.0.1", kTargetSize, kSeed, env_, c_api);
  }

  std::map<std::string, std::string> env_;
};

TEST_P(TeP2p, ReadWriteAndReadBackBetweenTwoProcesses) {
  TargetProcess target;
  ASSERT_TRUE(start_target(target));
  auto engine = make_engine();
  const SegmentHandle seg = engine->openSegment(target.segment());
  ASSERT_GE(seg, 0);
  EXPECT_EQ(engine->openSegment(target.segment()), seg) << "same name, same handle";
  std::vector<SegmentBufferInfo> bufs;
  ASSERT_EQ(engine->getSegmentBuffers(seg, bufs), 0);
  ASSERT_EQ(bufs.size(), 1u);
  EXPECT_EQ(bufs[0].addr, target.addr());
  EXPECT_EQ(bufs[0].length, kTargetSize);
  EXPECT_TRUE(bufs[0].location.starts_with("cpu:")) << bufs[0].location;

  std::vector<uint8_t> local(kTargetSize, 0);
  ASSERT_EQ(engine->registerLocalMemory(local.data(), local.size(), "cpu:0"), 0);
  // Blocks of several sizes in one batch: 64 KiB blocks, then a 1-byte one.
  std::vector<TransferRequest> reads;
  for (size_t off = 0; off + 65536 <= kTargetSize - 1; off += 65536) {
    reads.push_back({TransferRequest::READ, local.data() + off, seg, target.addr() + off, 65536});
  }
  reads.push_back({TransferRequest::READ, local.data() + kTargetSize - 1, seg,
                   target.addr() + kTargetSize - 1, 1});
  for (const TransferStatus& st : run_batch(*engine, reads)) {
    EXPECT_EQ(st.s, COMPLETED);
  }
  for (size_t i = 0; i < 65536 * 15; ++i) ASSERT_EQ(local[i], pattern(kSeed, i)) << "byte " << i;
  ASSERT_EQ(local[kTargetSize - 1], pattern(kSeed, kTargetSize - 1));

  // One write of the whole buffer, then one read back into a zeroed buffer.
  for (size_t i = 0; i < kTargetSize; ++i) local[i] = pattern(99, i);
  auto w =
      run_batch(*engine, {{TransferRequest::WRITE, local.data(), seg, target.addr(), kTargetSize}});
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].s, COMPLETED);
  EXPECT_EQ(w[0].transferred, kTargetSize);
  std::memset(local.data(), 0, local.size());
  auto r =
      run_batch(*engine, {{TransferRequest::READ, local.data(), seg, target.addr(), kTargetSize}});
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].s, COMPLETED);
  for (size_t i = 0; i < kTargetSize; ++i) ASSERT_EQ(local[i], pattern(99, i)) << "byte " << i;
  EXPECT_EQ(engine->getEndpointCount(), 1u);
  EXPECT_EQ(engine->unregisterLocalMemory(local.data()), 0);
  EXPECT_EQ(target.stop(), 0) << target.log();
}

TEST_P(TeP2p, CTargetServesTheCxxEngine) {
  TargetProcess target;
  ASSERT_TRUE(start_target(target, true));
  auto engine = make_engine();
  const SegmentHandle seg = engine->openSegment(target.segment());
  ASSERT_GE(seg, 0);
  std::vector<uint8_t> local(4096);
  ASSERT_EQ(engine->registerLocalMemory(local.data(), local.size()), 0);
  auto r =
      run_batch(*engine, {{TransferRequest::READ, local.data(), seg, target.addr() + 4096, 4096}});
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].s, COMPLETED);
  for (size_t i = 0; i < local.size(); ++i) ASSERT_EQ(local[i], pattern(kSeed, 4096 + i));
  EXPECT_EQ(target.stop(), 0) << target.log();
}

TEST_P(TeP2p, OutOfBoundsTasksAreInvalidAndMoveNothing) {
  TargetProcess target;
  ASSERT_TRUE(start_target(target));
  auto engine = make_engine();
  const SegmentHandle seg = engine->openSegment(target.segment());
  ASSERT_GE(seg, 0);
  std::vector<uint8_t> local(8192, 0xab);
  ASSERT_EQ(engine->registerLocalMemory(local.data(), local.size()), 0);
  const uint64_t a = target.addr();
  const uint64_t end = a + kTargetSize;
  const std::vector<TransferRequest> bad = {
      {TransferRequest::WRITE, local.data(), seg, a - 16, 32},         // starts before
      {TransferRequest::WRITE, local.data(), seg, end - 16, 32},       // runs past the end
      {TransferRequest::WRITE, local.data(), seg, end, 1},             // just past
      {TransferRequest::WRITE, local.data(), seg, a, 0},               // empty
      {TransferRequest::WRITE, local.data(), seg, UINT64_MAX - 4, 8},  // wraps
      {TransferRequest::WRITE, local.data(), seg + 100, a, 8},         // segment not open
      {TransferRequest::WRITE, local.data(), seg, a + 8, 32},          // valid
  };
  const BatchID batch = engine->allocateBatchID(bad.size());
  ASSERT_NE(batch, kInvalidBatchID);
  ASSERT_EQ(engine->submitTransfer(batch, bad), 0);
  for (size_t i = 0; i + 1 < bad.size(); ++i) {
    TransferStatus st{};
    ASSERT_EQ(engine->getTransferStatus(batch, i, st), 0);
    EXPECT_EQ(st.s, INVALID) << "task " << i << " is INVALID at once, at submit";
    EXPECT_EQ(st.transferred, 0u);
  }
  EXPECT_EQ(wait_task(*engine, batch, bad.size() - 1).s, COMPLETED);
  EXPECT_EQ(engine->freeBatchID(batch), 0);
  // The bytes next to the valid write kept the target's pattern: the last 16
  // bytes of the buffer, and the first 8.
  std::vector<uint8_t> back(kTargetSize, 0);
  ASSERT_EQ(engine->registerLocalMemory(back.data(), back.size()), 0);
  auto r = run_batch(*engine, {{TransferRequest::READ, back.data(), seg, a, kTargetSize}});
  ASSERT_EQ(r.size(), 1u);
  ASSERT_EQ(r[0].s, COMPLETED);
  for (size_t i = 0; i < kTargetSize; ++i) {
    const uint8_t want = (i >= 8 && i < 40) ? 0xab : pattern(kSeed, i);
    ASSERT_EQ(back[i], want) << "byte " << i;
  }
}

TEST_P(TeP2p, BatchRulesAndEngineRules) {
  TargetProcess target;
  ASSERT_TRUE(start_target(target));
  auto engine = make_engine();
  EXPECT_EQ(engine->init("P2PHANDSHAKE", "127.0.0.1"), -1) << "init twice";
  const SegmentHandle seg = engine->openSegment(target.segment());
  ASSERT_GE(seg, 0);
  std::vector<uint8_t> local(4096);
  ASSERT_EQ(engine->registerLocalMemory(local.data(), local.size()), 0);
  EXPECT_LT(engine->registerLocalMemory(local.data() + 100, 10), 0) << "overlap";
  EXPECT_LT(engine->registerLocalMemory(local.data(), 10), 0) << "same start";
  std::vector<uint8_t> other(4096);
  EXPECT_LT(engine->registerLocalMemory(other.data(), other.size(), "gpu:0"), 0) << "location";
  EXPECT_LT(engine->unregisterLocalMemory(other.data()), 0) << "not registered";
  EXPECT_LT(engine->unregisterLocalMemory(local.data() + 1), 0) << "not a start";
  EXPECT_EQ(engine->allocateBatchID(0), kInvalidBatchID);

  const TransferRequest one{TransferRequest::READ, local.data(), seg, target.addr(), 64};
  const BatchID batch = engine->allocateBatchID(2);
  ASSERT_NE(batch, kInvalidBatchID);
  EXPECT_LT(engine->submitTransfer(batch, {one, one, one}), 0) << "past batch_size";
  TransferStatus st{};
  EXPECT_LT(engine->getTransferStatus(batch, 0, st), 0) << "nothing was queued";
  EXPECT_EQ(engine->submitTransfer(batch, {one}), 0);
  EXPECT_EQ(engine->submitTransfer(batch, {one}), 0);
  EXPECT_LT(engine->submitTransfer(batch, {one}), 0) << "batch full";
  EXPECT_EQ(wait_task(*engine, batch, 0).s, COMPLETED);
  EXPECT_EQ(wait_task(*engine, batch, 1).s, COMPLETED);
  std::vector<TransferStatus> all;
  ASSERT_EQ(engine->getBatchTransferStatus(batch, all), 0);
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[1].transferred, 64u);
  EXPECT_LT(engine->getTransferStatus(batch, 2, st), 0) << "no such task";
  EXPECT_EQ(engine->freeBatchID(batch), 0);
  EXPECT_LT(engine->freeBatchID(batch), 0) << "freed twice";
  EXPECT_LT(engine->submitTransfer(batch, {one}), 0) << "freed batch";
  EXPECT_EQ(engine->closeSegment(seg), 0);
  EXPECT_LT(engine->closeSegment(seg), 0);
  EXPECT_LT(engine->openSegment("127.0.0.1"), 0) << "P2P names are ip:port";
}

TEST_P(TeP2p, OwnSegmentByItsNameAndLocationDetection) {
  auto engine = make_engine();
  std::vector<uint8_t> a(65536), b(65536, 0);
  for (size_t i = 0; i < a.size(); ++i) a[i] = pattern(3, i);
  ASSERT_EQ(engine->registerLocalMemory(a.data(), a.size(), "*"), 0);
  ASSERT_EQ(engine->registerLocalMemory(b.data(), b.size(), "cpu:0", false), 0);
  const std::string name = engine->getLocalIpAndPort();
  ASSERT_TRUE(name.starts_with("127.0.0.1:")) << name;
  const SegmentHandle self = engine->openSegment(name);
  ASSERT_GE(self, 0);
  std::vector<SegmentBufferInfo> bufs;
  ASSERT_EQ(engine->getSegmentBuffers(self, bufs), 0);
  ASSERT_EQ(bufs.size(), 1u) << "only the remote-accessible buffer is published";
  EXPECT_TRUE(bufs[0].location.starts_with("cpu:")) << "'*' detected: " << bufs[0].location;
  auto r = run_batch(*engine, {{TransferRequest::READ, b.data(), self,
                                reinterpret_cast<uint64_t>(a.data()), a.size()}});
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].s, COMPLETED);
  EXPECT_EQ(a, b);
  // Not remote-accessible: not a target.
  auto bad = run_batch(*engine, {{TransferRequest::WRITE, a.data(), self,
                                  reinterpret_cast<uint64_t>(b.data()), 16}});
  ASSERT_EQ(bad.size(), 1u);
  EXPECT_EQ(bad[0].s, INVALID);
}

TEST_P(TeP2p, OpeningAgainFollowsARestartedOwner) {
  auto port = ucs::find_free_tcp_port();
  ASSERT_TRUE(port.ok());
  const std::string name = "127.0.0.1:" + std::to_string(*port);
  auto engine = make_engine();
  std::vector<uint8_t> local(4096);
  ASSERT_EQ(engine->registerLocalMemory(local.data(), local.size()), 0);
  SegmentHandle seg = -1;
  for (unsigned seed : {31u, 32u}) {
    TargetProcess target;
    ASSERT_TRUE(target.start("P2PHANDSHAKE", name, kTargetSize, seed, env_));
    ASSERT_EQ(target.segment(), name);
    const SegmentHandle again = engine->openSegment(name);
    if (seg >= 0) {
      EXPECT_EQ(again, seg) << "the same name keeps its handle";
    }
    seg = again;
    ASSERT_GE(seg, 0);
    std::vector<SegmentBufferInfo> bufs;
    ASSERT_EQ(engine->getSegmentBuffers(seg, bufs), 0);
    ASSERT_EQ(bufs.size(), 1u);
    EXPECT_EQ(bufs[0].addr, target.addr()) << "the new owner's buffer";
    auto r = run_batch(*engine, {{TransferRequest::READ, local.data(), seg, target.addr(), 4096}});
    ASSERT_EQ(r.size(), 1u);
    ASSERT_EQ(r[0].s, COMPLETED) << "seed " << seed;
    for (size_t i = 0; i < local.size(); ++i) ASSERT_EQ(local[i], pattern(seed, i)) << i;
    EXPECT_EQ(target.stop(), 0) << target.log();
  }
}

TEST_P(TeP2p, DestroyedEngineNoLongerServesItsSegment) {
  std::string name;
  {
    auto engine = make_engine();
    name = engine->getLocalIpAndPort();
    auto peer = make_engine();
    EXPECT_GE(peer->openSegment(name), 0);
  }
  // Not on the port the destroyed engine freed: given that one (a TSan dry
  // run was), the new engine would find `name` its own segment.
  const int freed = std::stoi(name.substr(name.rfind(':') + 1));
  const bool below = freed >= 45000;
  auto engine = make_engine({{"MC_MIN_RPC_PORT", below ? "44000" : "46000"},
                             {"MC_MAX_RPC_PORT", below ? "44999" : "46999"}});
  ASSERT_NE(engine->getLocalIpAndPort(), name);
  EXPECT_LT(engine->openSegment(name), 0);
}

TEST_P(TeP2p, RpcPortFromTheRangeOrTheName) {
  auto ranged = make_engine({{"MC_MIN_RPC_PORT", "42000"}, {"MC_MAX_RPC_PORT", "42999"}});
  const std::string name = ranged->getLocalIpAndPort();
  const int port = std::stoi(name.substr(name.find(':') + 1));
  EXPECT_GE(port, 42000);
  EXPECT_LE(port, 42999);
  ScopedEnv scoped(env_);
  TransferEngine fixed;
  EXPECT_LT(fixed.init("P2PHANDSHAKE", name), 0) << "the named port is taken";
  TransferEngine bad;
  EXPECT_LT(bad.init("P2PHANDSHAKE", "127.0.0.1:notaport"), 0);
}

// The threads of this process named `name` (ucs::set_thread_name).
std::vector<pid_t> threads_named(const std::string& name) {
  std::vector<pid_t> tids;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(e.path() / "comm");
    std::string line;
    if (std::getline(comm, line) && line == name) tids.push_back(std::stoi(e.path().filename()));
  }
  return tids;
}

// The threads named `name` once there are `count` of them: a thread names
// itself when it starts, which may be after its engine's init() returned.
// Waits up to 10 s, then gives what there is.
std::vector<pid_t> await_threads_named(const std::string& name, size_t count) {
  std::vector<pid_t> tids = threads_named(name);
  for (int i = 0; i < 1000 && tids.size() < count; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    tids = threads_named(name);
  }
  return tids;
}

// How often thread `tid` of this process went to sleep and was woken
// (voluntary_ctxt_switches of its /proc status); -1 when unreadable.
long thread_sleeps(pid_t tid) {
  std::ifstream status("/proc/self/task/" + std::to_string(tid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.starts_with("voluntary_ctxt_switches:")) return std::stol(line.substr(24));
  }
  return -1;
}

// A caller that polls getTransferStatus completes its transfers itself: the
// engine's progress thread naps meanwhile (it wakes about once a
// millisecond, and a futex wait or two each time for the engine's lock)
// instead of being woken for every transfer and polling beside the caller:
// before, over tcp, it was woken once per transfer, over sm once per ten.
// Back-to-back one-task batches for half a second, each polled without
// pause, as a KV-cache reader waits for a block.
TEST_P(TeP2p, ACallerThatPollsDrivesItsTransfersWhileTheProgressThreadNaps) {
  auto target = make_engine();
  const std::vector<pid_t> targets = await_threads_named("mc_te_progress", 1);
  ASSERT_EQ(targets.size(), 1u) << "the target's progress thread";
  auto engine = make_engine();
  std::vector<uint8_t> dst(65536, 0), src(65536);
  ASSERT_EQ(target->registerLocalMemory(dst.data(), dst.size(), "cpu:0"), 0);
  ASSERT_EQ(engine->registerLocalMemory(src.data(), src.size(), "cpu:0"), 0);
  const SegmentHandle seg = engine->openSegment(target->getLocalIpAndPort());
  ASSERT_GE(seg, 0);
  const uint64_t base = reinterpret_cast<uint64_t>(dst.data());
  // Only the initiator's progress thread is watched: the target's serves
  // the puts and flushes that arrive (tcp's sockets, in progress mode), and
  // is woken for them whenever they come further apart than its polling
  // window.
  std::vector<pid_t> progress = await_threads_named("mc_te_progress", 2);
  ASSERT_EQ(progress.size(), 2u) << "two engines, two progress threads";
  std::erase(progress, targets[0]);
  ASSERT_EQ(progress.size(), 1u) << "the initiator's progress thread";
  std::vector<long> sleeps0;
  for (pid_t t : progress) sleeps0.push_back(thread_sleeps(t));
  const auto start = std::chrono::steady_clock::now();
  const auto end = start + std::chrono::milliseconds(500);
  uint64_t n = 0;
  while (std::chrono::steady_clock::now() < end) {
    std::memset(src.data(), int(n & 0xff), 4096);
    const TransferRequest req{TransferRequest::WRITE, src.data(), seg, base, 4096};
    const BatchID batch = engine->allocateBatchID(1);
    ASSERT_EQ(engine->submitTransfer(batch, {req}), 0);
    TransferStatus st{};
    do {
      ASSERT_EQ(engine->getTransferStatus(batch, 0, st), 0);
    } while (st.s == WAITING || st.s == PENDING);
    ASSERT_EQ(st.s, COMPLETED) << "transfer " << n;
    ASSERT_EQ(dst[4095], uint8_t(n & 0xff)) << "transfer " << n << " completed before its data";
    ASSERT_EQ(engine->freeBatchID(batch), 0);
    ++n;
  }
  const long ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - start)
                      .count();
  // Its naps' own wake-ups (3 a millisecond, with the lock's; 4 under a
  // sanitizer, where the caller holds the lock most of the time), and one
  // per twenty transfers. Woken for each transfer, it would pass this
  // (2.6 a transfer over tcp: about 2600 against 2050 under ASan). That
  // tells the two apart only where the transfers outnumber the
  // milliseconds: under TSan, on a loaded machine, 156 took 501 ms, and the
  // lock's wake-ups, 6 a millisecond there, were all the count said; such a
  // run checks the data only.
  EXPECT_GT(n, 0u);
  if (long(n) < ms) {
    std::printf("wake-ups not checked: %lu transfers in %ld ms are too few to tell a wake-up per "
                "transfer from the naps'\n",
                static_cast<unsigned long>(n), ms);
    return;
  }
  const long allowed = 4 * ms + long(n / 20);
  for (size_t i = 0; i < progress.size(); ++i) {
    const long woken = thread_sleeps(progress[i]) - sleeps0[i];
    EXPECT_LT(woken, allowed) << "progress thread " << progress[i] << " was woken " << woken
                              << " times in " << n << " transfers and " << ms << " ms";
  }
}

// CPU time thread `tid` of this process has used, in seconds (its CPU
// clock: Linux's per-thread clock id for a tid).
double thread_cpu_s(pid_t tid) {
  const clockid_t clock = (~static_cast<clockid_t>(tid) << 3) | 6;  // per thread, sched
  timespec ts{};
  if (clock_gettime(clock, &ts) != 0) return -1;
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

// In either MC_TE_ASYNC_MODE the engines move data both ways, and once idle
// their progress threads sleep: in progress mode on the worker's event fd
// (tcp's sockets), which a pass must leave unreadable, or the thread would
// spin on it.
TEST_P(TeP2p, BothAsyncModesMoveDataAndSleepWhenIdle) {
  for (const char* mode : {"progress", "thread"}) {
    SCOPED_TRACE(mode);
    // The buffers outlive the engines that registered them. The target's
    // event thread reads dst in sendmsg to serve the READ; TSan records
    // those reads after the socket's release, so the READ's completion does
    // not order them before dst's free (it reported the free as a race in
    // CI). Destroying the target first joins that thread.
    std::vector<uint8_t> dst(1 << 20, 0), src(1 << 20), back(1 << 20, 0);
    auto target = make_engine({{"MC_TE_ASYNC_MODE", mode}});
    auto engine = make_engine({{"MC_TE_ASYNC_MODE", mode}});
    for (size_t i = 0; i < src.size(); ++i) src[i] = pattern(7, i);
    ASSERT_EQ(target->registerLocalMemory(dst.data(), dst.size(), "cpu:0"), 0);
    ASSERT_EQ(engine->registerLocalMemory(src.data(), src.size(), "cpu:0"), 0);
    ASSERT_EQ(engine->registerLocalMemory(back.data(), back.size(), "cpu:0"), 0);
    const SegmentHandle seg = engine->openSegment(target->getLocalIpAndPort());
    ASSERT_GE(seg, 0);
    const uint64_t base = reinterpret_cast<uint64_t>(dst.data());
    auto w = run_batch(*engine, {{TransferRequest::WRITE, src.data(), seg, base, src.size()}});
    ASSERT_EQ(w.size(), 1u);
    EXPECT_EQ(w[0].s, COMPLETED);
    auto r = run_batch(*engine, {{TransferRequest::READ, back.data(), seg, base, back.size()}});
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].s, COMPLETED);
    EXPECT_EQ(back, src);
    const std::vector<pid_t> progress = await_threads_named("mc_te_progress", 2);
    ASSERT_EQ(progress.size(), 2u);
    std::vector<double> cpu0;
    for (pid_t t : progress) cpu0.push_back(thread_cpu_s(t));
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    for (size_t i = 0; i < progress.size(); ++i) {
      const double used = thread_cpu_s(progress[i]) - cpu0[i];
      EXPECT_LT(used, 0.06) << "progress thread " << progress[i] << " used " << used
                            << " s of CPU in 0.3 s with nothing to do";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Tls, TeP2p, testing::Values("tcp", "sm"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace mc::te::test
