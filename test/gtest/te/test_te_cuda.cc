// SPDX-License-Identifier: Apache-2.0
// The Transfer Engine moving GPU memory: a cudaMalloc'd buffer registered as
// "cuda:0" and as "*" is written to a target process's host buffer and read
// back over tcp and sm, through UCP's staging protocol (cuda_copy and host
// bounce buffers). Built where CUDA is found; skipped without a GPU
// (test/gpu/run.sh runs it on one).
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstring>

#include "te/te_test_util.h"
#include "uct/base/component_loader.h"

namespace mc::te::test {
namespace {

constexpr size_t kSize = 3 << 20;  // under, at and over the 1 MiB fragment below

class TeCuda : public testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    uct::Component* cuda = uct::find_component("cuda_copy");
    if (!cuda || cuda->md_names().empty()) {
      GTEST_SKIP() << "no GPU: " << (cuda ? cuda->unavailable_reason() : "no cuda_copy module");
    }
    if (!uct::find_component(GetParam())) GTEST_SKIP() << GetParam() << " is not available";
    env_ = {{"MC_TLS", GetParam() + ",cuda_copy"},
            {"MC_NET_DEVICES", "lo"},
            {"MC_TRANSFER_TIMEOUT", "30s"},
            {"MC_RNDV_FRAG_SIZE", "cuda:1m"}};
  }

  std::map<std::string, std::string> env_;
};

TEST_P(TeCuda, WriteAndReadBackDeviceMemory) {
  TargetProcess target;
  ASSERT_TRUE(target.start("P2PHANDSHAKE", "127.0.0.1", kSize, 3, env_));
  TransferEngine engine;
  {
    ScopedEnv scoped(env_);
    ASSERT_EQ(engine.init("P2PHANDSHAKE", "127.0.0.1"), 0);
  }
  const SegmentHandle seg = engine.openSegment(target.segment());
  ASSERT_GE(seg, 0);
  for (const char* location : {"cuda:0", "*"}) {
    SCOPED_TRACE(location);
    void* vram = nullptr;
    ASSERT_EQ(cudaMalloc(&vram, kSize), cudaSuccess);
    ASSERT_EQ(engine.registerLocalMemory(vram, kSize, location), 0);
    std::vector<uint8_t> host(kSize);
    for (size_t i = 0; i < kSize; ++i) host[i] = pattern(77, i);
    ASSERT_EQ(cudaMemcpy(vram, host.data(), kSize, cudaMemcpyHostToDevice), cudaSuccess);
    auto* p = static_cast<uint8_t*>(vram);
    const uint64_t t = target.addr();
    // Sizes under, at and over the fragment, not multiples of it.
    std::vector<TransferStatus> w =
        run_batch(engine, {{TransferRequest::WRITE, p, seg, t, 1000},
                           {TransferRequest::WRITE, p + 1000, seg, t + 1000, 1 << 20},
                           {TransferRequest::WRITE, p + 1000 + (1 << 20), seg,
                            t + 1000 + (1 << 20), kSize - 1000 - (1 << 20)}});
    for (const TransferStatus& st : w) {
      EXPECT_EQ(st.s, COMPLETED);
    }
    ASSERT_EQ(cudaMemset(vram, 0, kSize), cudaSuccess);
    std::vector<TransferStatus> r = run_batch(engine, {{TransferRequest::READ, p, seg, t, kSize}});
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].s, COMPLETED);
    std::vector<uint8_t> back(kSize);
    ASSERT_EQ(cudaMemcpy(back.data(), vram, kSize, cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_EQ(std::memcmp(back.data(), host.data(), kSize), 0);
    EXPECT_EQ(engine.unregisterLocalMemory(vram), 0);
    (void)cudaFree(vram);
  }
  EXPECT_EQ(target.stop(), 0) << target.log();
}

INSTANTIATE_TEST_SUITE_P(Tl, TeCuda, testing::Values("tcp", "sm"));

}  // namespace
}  // namespace mc::te::test
