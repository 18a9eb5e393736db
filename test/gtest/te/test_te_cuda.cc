// SPDX-License-Identifier: Apache-2.0
// The Transfer Engine moving GPU memory: a cudaMalloc'd buffer registered as
// "cuda:0" and as "*" is written to a target process's host buffer and read
// back over tcp and sm, through UCP's staging protocol (cuda_copy and host
// bounce buffers); and written to a file (nvmeof) segment and read back
// through pinned host bounce buffers (engine_file_staged.cc), registered,
// detected as "*" and not registered at all. Built where CUDA is found;
// skipped without a GPU (test/gpu/run.sh runs it on one).
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstring>

#include "common/gpu_util.h"
#include "common/services.h"
#include "te/te_test_util.h"
#include "ucs/sys/sys.h"
#include "uct/base/component_loader.h"
#include "uct/nvmeof/nvmeof_test_util.h"

namespace mc::te::test {
namespace {

constexpr size_t kSize = 3 << 20;  // under, at and over the 1 MiB fragment below

class TeCuda : public testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (const std::string why = mc::test::no_gpu_reason(); !why.empty()) GTEST_SKIP() << why;
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
                           {TransferRequest::WRITE, p + 1000 + (1 << 20), seg, t + 1000 + (1 << 20),
                            kSize - 1000 - (1 << 20)}});
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

// VRAM <-> a file segment of two files, through pinned bounce buffers of
// 1 MiB (MC_RNDV_FRAG_SIZE's cuda entry) copied by cuda_copy.
TEST(TeCudaFile, WriteAndReadFileSegmentThroughBounceBuffers) {
  namespace nt = mc::uct::nvmeof::test;
  if (const std::string why = mc::test::no_gpu_reason(); !why.empty()) GTEST_SKIP() << why;
  if (!uct::find_component("nvmeof")) GTEST_SKIP() << "nvmeof not built (liburing)";
  constexpr size_t kMiB = 1 << 20;
  constexpr size_t kLen0 = 2 * kMiB + 4097, kLen1 = 3 * kMiB;
  nt::TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string f0 = dir.file("disk0"), f1 = dir.file("disk1");
  ASSERT_TRUE(nt::write_pattern_file(f0, kLen0, 1));
  ASSERT_TRUE(nt::write_pattern_file(f1, kLen1, 2));
  mc::test::Services services;
  const std::string url = services.start_metadata_server();
  ASSERT_FALSE(url.empty());
  ASSERT_TRUE(register_file_segment(url, "gpu-files", "127.0.0.1", {f0, f1}));
  const std::map<std::string, std::string> env = {
      {"MC_TLS", "tcp,cuda_copy"},      {"MC_NET_DEVICES", "lo"},
      {"MC_TRANSFER_TIMEOUT", "30s"},   {"MC_METADATA_TIMEOUT", "3s"},
      {"MC_RNDV_FRAG_SIZE", "cuda:1m"}, {"MC_STAGING_DEPTH", "3"}};
  TransferEngine engine;
  {
    ScopedEnv scoped(env);
    const uint16_t port = ucs::find_free_tcp_port().value_or(1);
    ASSERT_EQ(engine.init(url, "127.0.0.1:" + std::to_string(port)), 0);
  }
  const SegmentHandle seg = engine.openSegment("gpu-files");
  ASSERT_GE(seg, 0);
  std::vector<uint8_t> want = nt::pattern_bytes(1, 0, kLen0);
  const std::vector<uint8_t> w1 = nt::pattern_bytes(2, 0, kLen1);
  want.insert(want.end(), w1.begin(), w1.end());
  constexpr size_t kVram = 4 * kMiB;
  void* vram = nullptr;
  ASSERT_EQ(cudaMalloc(&vram, kVram), cudaSuccess);
  auto* p = static_cast<uint8_t*>(vram);
  unsigned seed = 50;
  for (const char* location : {"cuda:0", "*", ""}) {  // "": not registered
    SCOPED_TRACE(*location ? location : "not registered");
    if (*location) {
      ASSERT_EQ(engine.registerLocalMemory(vram, kVram, location), 0);
    }
    // Below, at and above the fragment; unaligned, across the boundary.
    const std::pair<uint64_t, size_t> cases[] = {
        {13, 1000}, {kMiB + 5, kMiB}, {kLen0 - kMiB - 3, 2 * kMiB + 7}};
    for (const auto& [offset, length] : cases) {
      const std::vector<uint8_t> v = nt::pattern_bytes(++seed, offset, length);
      ASSERT_EQ(cudaMemcpy(p + 1, v.data(), length, cudaMemcpyHostToDevice), cudaSuccess);
      std::vector<TransferStatus> r =
          run_batch(engine, {{TransferRequest::WRITE, p + 1, seg, offset, length}});
      ASSERT_EQ(r.size(), 1u);
      ASSERT_EQ(r[0].s, COMPLETED) << "write at " << offset;
      std::copy(v.begin(), v.end(), want.begin() + static_cast<ptrdiff_t>(offset));
      std::vector<uint8_t> got = nt::read_file(f0);
      const std::vector<uint8_t> g1 = nt::read_file(f1);
      got.insert(got.end(), g1.begin(), g1.end());
      ASSERT_TRUE(got == want) << "the files (read()) after the write at " << offset;
      ASSERT_EQ(cudaMemset(vram, 0, kVram), cudaSuccess);
      r = run_batch(engine, {{TransferRequest::READ, p + 3, seg, offset, length}});
      ASSERT_EQ(r.size(), 1u);
      ASSERT_EQ(r[0].s, COMPLETED) << "read at " << offset;
      std::vector<uint8_t> back(length);
      ASSERT_EQ(cudaMemcpy(back.data(), p + 3, length, cudaMemcpyDeviceToHost), cudaSuccess);
      EXPECT_TRUE(back == v) << "VRAM after the read at " << offset;
    }
    if (*location) {
      EXPECT_EQ(engine.unregisterLocalMemory(vram), 0);
    }
  }
  EXPECT_EQ(nt::file_size(f0), kLen0);
  EXPECT_EQ(nt::file_size(f1), kLen1);
  EXPECT_EQ(engine.closeSegment(seg), 0);
  (void)cudaFree(vram);
}

}  // namespace
}  // namespace mc::te::test
