// SPDX-License-Identifier: Apache-2.0
// File (nvmeof) segments and GPU memory: a TE WRITE from "VRAM" to a
// segment of two files and a READ back into it go through host bounce
// buffers (engine_file_staged.cc), at sizes below, at and above the
// fragment (MC_RNDV_FRAG_SIZE's cuda entry), at unaligned offsets and
// across the files' boundary; the files are checked with plain read(), the
// VRAM directly, and the fake's copy count shows every fragment was copied.
// A failed copy ends the task FAILED; without a memory-type transport the
// task is INVALID. The GPU is the fake of ucp/fake_gpu.h, given to the
// engine through te::set_test_components (test only); test_te_cuda.cc does
// the same on cudaMalloc'd memory with cuda_copy.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>

#include "te/nvmeof_vram_fixture.h"
#include "uct/api/md.h"

namespace mc::te::test::te_nvmeof_vram {
namespace {

namespace nt = mc::uct::nvmeof::test;
using ucp::test::fake_gpu_component;
using ucp::test::fake_gpu_state;
using ucp::test::FakeGpuFault;
using ucp::test::FakeGpuState;

constexpr size_t kFrag = 16 << 10;
constexpr size_t kLen0 = 5 * kFrag + 333;  // unaligned: so is the boundary
constexpr size_t kLen1 = 6 * kFrag;
constexpr size_t kTotal = kLen0 + kLen1;
constexpr uint64_t kSeed0 = 11, kSeed1 = 12;

std::map<std::string, std::string> engine_env(const std::string& tls) {
  return loopback_env(tls, {{"MC_METADATA_TIMEOUT", "3s"},
                            {"MC_RNDV_FRAG_SIZE", "host:512k,cuda:16k"},
                            {"MC_STAGING_DEPTH", "3"},
                            {"MC_LOG_LEVEL", "warn"}});
}

size_t frags(size_t n) {
  return (n + kFrag - 1) / kFrag;
}

class TeNvmeofVram : public NvmeofVramFixture {
 protected:
  TeNvmeofVram() : NvmeofVramFixture({"vram-seg", kLen0, kLen1, kSeed0, kSeed1}) {}

  // An engine with the fake GPU (`fake`) and the transports `tls`.
  void open_engine(bool fake, const std::string& tls) {
    NvmeofVramFixture::open_engine(fake ? std::vector<uct::Component*>{fake_gpu_component()}
                                        : std::vector<uct::Component*>{},
                                   engine_env(tls));
  }
};

TEST_F(TeNvmeofVram, WriteAndReadBackThroughBounceBuffers) {
  ASSERT_NO_FATAL_FAILURE(open_engine(true, std::string("tcp,") + ucp::test::kFakeGpuTl));
  // The segment as it should be: the files' patterns, then each write.
  std::vector<uint8_t> want = initial_segment();
  struct Case {
    uint64_t offset;  ///< in the segment
    size_t length;
    size_t local;  ///< offset in the VRAM
  };
  const Case cases[] = {
      {0, 1000, 0},                            // below the fragment, aligned
      {4097, kFrag, 3},                        // at it, unaligned
      {100, kFrag + 1, 1},                     // above it
      {kLen0 - 5000, 3 * kFrag + 123, 7},      // across the files' boundary
      {7, kTotal - 10, 0},                     // nearly all: more fragments than the depth
      {kLen0 + kLen1 - 4096, 4096, 4096 + 5},  // the last bytes of the segment
  };
  unsigned seed = 40;
  for (const Case& c : cases) {
    SCOPED_TRACE("offset " + std::to_string(c.offset) + ", " + std::to_string(c.length) + " bytes");
    const std::vector<uint8_t> v = nt::pattern_bytes(++seed, c.offset, c.length);
    std::memcpy(vram() + c.local, v.data(), c.length);
    size_t copies = fake_gpu_state().copies;
    TransferStatus st = run(TransferRequest::WRITE, vram() + c.local, c.offset, c.length);
    ASSERT_EQ(st.s, COMPLETED);
    EXPECT_EQ(st.transferred, c.length);
    EXPECT_EQ(fake_gpu_state().copies - copies, frags(c.length)) << "one copy per fragment";
    std::copy(v.begin(), v.end(), want.begin() + static_cast<ptrdiff_t>(c.offset));
    const std::vector<uint8_t> got = files();
    ASSERT_EQ(got.size(), kTotal) << "the files' sizes changed";
    for (size_t i = 0; i < kTotal; ++i) ASSERT_EQ(got[i], want[i]) << "segment byte " << i;

    std::memset(vram(), 0, vram_->length());
    copies = fake_gpu_state().copies;
    st = run(TransferRequest::READ, vram() + c.local, c.offset, c.length);
    ASSERT_EQ(st.s, COMPLETED);
    EXPECT_EQ(fake_gpu_state().copies - copies, frags(c.length)) << "one copy per fragment";
    EXPECT_EQ(std::memcmp(vram() + c.local, v.data(), c.length), 0);
    if (c.local > 0) {
      EXPECT_EQ(vram()[c.local - 1], 0) << "wrote before";
    }
    EXPECT_EQ(vram()[c.local + c.length], 0) << "wrote past";
  }
  EXPECT_GE(fake_gpu_state().max_queued, 2u) << "the fragments' copies overlap";
  // Out of range stays INVALID, and nothing is copied.
  const size_t copies = fake_gpu_state().copies;
  EXPECT_EQ(run(TransferRequest::WRITE, vram(), kTotal - 10, 20).s, INVALID);
  EXPECT_EQ(run(TransferRequest::READ, vram(), kTotal, 1).s, INVALID);
  EXPECT_EQ(fake_gpu_state().copies, copies);
  EXPECT_EQ(nt::file_size(f1_), kLen1) << "nothing is written past the end";
  EXPECT_EQ(engine_->unregisterLocalMemory(vram()), 0);
  EXPECT_EQ(engine_->closeSegment(seg_), 0);
}

TEST_F(TeNvmeofVram, FailedCopyEndsTheTaskFailed) {
  ASSERT_NO_FATAL_FAILURE(open_engine(true, std::string("tcp,") + ucp::test::kFakeGpuTl));
  const size_t n = 5 * kFrag + 17;
  FakeGpuState& fake = fake_gpu_state();
  // A WRITE whose third copy (VRAM -> bounce) completes with an error.
  fake.fault = FakeGpuFault::Async;
  fake.fault_at = fake.copies + 3;
  EXPECT_EQ(run(TransferRequest::WRITE, vram(), 1000, n).s, FAILED);
  // A READ whose second copy (bounce -> VRAM) cannot be posted.
  fake.fault = FakeGpuFault::Post;
  fake.fault_at = fake.copies + 2;
  EXPECT_EQ(run(TransferRequest::READ, vram(), 1000, n).s, FAILED);
  // A READ whose first copy completes with an error.
  fake.fault = FakeGpuFault::Async;
  fake.fault_at = fake.copies + 1;
  EXPECT_EQ(run(TransferRequest::READ, vram(), kLen0 - 10, n).s, FAILED);
  // The bounce buffers came back: the next tasks complete.
  fake.fault = FakeGpuFault::None;
  const std::vector<uint8_t> v = nt::pattern_bytes(77, 0, n);
  std::memcpy(vram(), v.data(), n);
  EXPECT_EQ(run(TransferRequest::WRITE, vram(), 2000, n).s, COMPLETED);
  std::memset(vram(), 0, n);
  EXPECT_EQ(run(TransferRequest::READ, vram(), 2000, n).s, COMPLETED);
  EXPECT_EQ(std::memcmp(vram(), v.data(), n), 0);
  EXPECT_EQ(engine_->closeSegment(seg_), 0);
}

TEST_F(TeNvmeofVram, NoMemoryTypeTransportIsInvalid) {
  ASSERT_NO_FATAL_FAILURE(open_engine(false, "tcp"));
  EXPECT_EQ(run(TransferRequest::WRITE, vram(), 0, 4096).s, INVALID);
  EXPECT_EQ(run(TransferRequest::READ, vram(), 0, 4096).s, INVALID);
  EXPECT_EQ(files(), initial_segment()) << "nothing was written";
  // Host memory still moves.
  std::vector<uint8_t> host(4096);
  ASSERT_EQ(engine_->registerLocalMemory(host.data(), host.size(), "cpu:0"), 0);
  EXPECT_EQ(run(TransferRequest::READ, host.data(), 10, 4096).s, COMPLETED);
  EXPECT_EQ(host, nt::pattern_bytes(kSeed0, 10, 4096));
  EXPECT_EQ(engine_->closeSegment(seg_), 0);
}

}  // namespace
}  // namespace mc::te::test::te_nvmeof_vram
