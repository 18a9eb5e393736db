// SPDX-License-Identifier: Apache-2.0
// A Transfer Engine target's GPU memory over transports that cannot reach
// it (tcp, sm): the target registers (fake) device memory as cuda:0, which only
// its memory-type md takes; the initiator's WRITE and READ from host memory
// go by UCP's remote staging (the target stages them through its bounce
// buffers). Two engines in this process (P2PHANDSHAKE); the GPU is the fake
// of ucp/fake_gpu.h, given to both through te::set_test_components.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <memory>

#include "te/te_test_util.h"
#include "ucp/fake_gpu.h"
#include "ucp/te/test_hooks.h"
#include "uct/api/md.h"
#include "uct/base/component_loader.h"

namespace mc::te::test::te_remote_vram {
namespace {

using ucp::test::fake_gpu_component;
using ucp::test::fake_gpu_state;
using ucp::test::FakeGpuState;

constexpr size_t kFrag = 16 << 10;
constexpr size_t kVram = 8 * kFrag;

class TeRemoteVram : public testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (uct::find_component(GetParam()) == nullptr) GTEST_SKIP() << GetParam() << " not built";
    fake_gpu_state() = FakeGpuState{};
    // "Device memory" of a fake md of the test's own; the target engine's
    // fake md registers it when it is registered as cuda:0.
    vram_ = ucp::test::FakeVram::alloc(kVram);
    ASSERT_TRUE(vram_) << "fake GPU memory";
    set_test_components({fake_gpu_component()});
    ScopedEnv scoped({{"MC_TLS", GetParam() + "," + ucp::test::kFakeGpuTl},
                      {"MC_NET_DEVICES", "lo"},
                      {"MC_TRANSFER_TIMEOUT", "20s"},
                      {"MC_RNDV_FRAG_SIZE", "host:512k,cuda:16k"},
                      {"MC_STAGING_DEPTH", "3"},
                      {"MC_LOG_LEVEL", "warn"}});
    target_ = std::make_unique<TransferEngine>();
    ASSERT_EQ(target_->init("P2PHANDSHAKE", "127.0.0.1"), 0);
    initiator_ = std::make_unique<TransferEngine>();
    ASSERT_EQ(initiator_->init("P2PHANDSHAKE", "127.0.0.1"), 0);
  }

  void TearDown() override {
    initiator_.reset();
    target_.reset();
    set_test_components({});
    vram_.reset();
    fake_gpu_state() = FakeGpuState{};
  }

  uint8_t* vram() const { return vram_->data(); }

  std::unique_ptr<ucp::test::FakeVram> vram_;
  std::unique_ptr<TransferEngine> target_, initiator_;
};

TEST_P(TeRemoteVram, WriteAndReadTargetCudaMemory) {
  std::memset(vram(), 0, kVram);
  ASSERT_EQ(target_->registerLocalMemory(vram(), kVram, "cuda:0"), 0);
  const SegmentHandle seg = initiator_->openSegment(target_->getLocalIpAndPort());
  ASSERT_GE(seg, 0);
  std::vector<uint8_t> host(kVram);
  ASSERT_EQ(initiator_->registerLocalMemory(host.data(), host.size(), "cpu:0"), 0);
  const uint64_t base = reinterpret_cast<uintptr_t>(vram());
  const size_t off = 1000, n = 5 * kFrag + 77;  // several of the target's fragments
  for (size_t i = 0; i < n; ++i) host[i] = pattern(3, i);
  std::vector<TransferStatus> r =
      run_batch(*initiator_, {{TransferRequest::WRITE, host.data(), seg, base + off, n}});
  ASSERT_EQ(r.size(), 1u);
  ASSERT_EQ(r[0].s, COMPLETED);
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(vram()[off + i], pattern(3, i)) << i;
  EXPECT_EQ(vram()[off - 1], 0);
  EXPECT_EQ(vram()[off + n], 0);
  EXPECT_GE(fake_gpu_state().copies, (n + kFrag - 1) / kFrag) << "not staged at the target";
  for (size_t i = 0; i < kVram; ++i) vram()[i] = pattern(4, i);
  std::memset(host.data(), 0, host.size());
  r = run_batch(*initiator_, {{TransferRequest::READ, host.data(), seg, base + 8, kVram - 8}});
  ASSERT_EQ(r.size(), 1u);
  ASSERT_EQ(r[0].s, COMPLETED);
  for (size_t i = 0; i < kVram - 8; ++i) ASSERT_EQ(host[i], pattern(4, i + 8)) << i;
}

// A notified write through remote staging: the target takes the
// notification only once the staged bytes are in its (device) memory.
TEST_P(TeRemoteVram, NotifiedWriteIsInTheTargetMemoryOnArrival) {
  std::memset(vram(), 0, kVram);
  ASSERT_EQ(target_->registerLocalMemory(vram(), kVram, "cuda:0"), 0);
  const SegmentHandle seg = initiator_->openSegment(target_->getLocalIpAndPort());
  ASSERT_GE(seg, 0);
  std::vector<uint8_t> host(kVram);
  ASSERT_EQ(initiator_->registerLocalMemory(host.data(), host.size(), "cpu:0"), 0);
  const uint64_t base = reinterpret_cast<uintptr_t>(vram());
  for (unsigned round = 0; round < 3; ++round) {
    const size_t n = kVram - round * kFrag - 13;
    for (size_t i = 0; i < n; ++i) host[i] = pattern(10 + round, i);
    const BatchID b = initiator_->allocateBatchID(1);
    ASSERT_EQ(initiator_->submitTransferWithNotify(
                  b, {{TransferRequest::WRITE, host.data(), seg, base, n}},
                  {"staged", std::to_string(round)}),
              0);
    std::vector<ReceivedNotify> got;
    for (int i = 0; i < 60000 && got.empty(); ++i) {  // a hang detector, nothing timed
      ASSERT_EQ(target_->getNotifies(got), 0);
      if (got.empty()) ::usleep(1000);
    }
    ASSERT_EQ(got.size(), 1u) << "round " << round;
    EXPECT_EQ(got[0].notify.notify_msg, std::to_string(round));
    EXPECT_EQ(got[0].sender, initiator_->getLocalIpAndPort());
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(vram()[i], pattern(10 + round, i)) << i;
    EXPECT_EQ(wait_task(*initiator_, b, 0).s, COMPLETED);
    EXPECT_EQ(initiator_->freeBatchID(b), 0);
  }
  EXPECT_GE(fake_gpu_state().copies, 3u) << "not staged at the target";
}

INSTANTIATE_TEST_SUITE_P(Tl, TeRemoteVram, testing::Values("tcp", "sm"));

}  // namespace
}  // namespace mc::te::test::te_remote_vram
