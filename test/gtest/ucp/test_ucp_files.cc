// SPDX-License-Identifier: Apache-2.0
// Files through a worker (ucp/api/file.h): Worker::file_open, file_route and
// file_io over the nvmeof transport on real files in a temporary directory,
// each file read back with read(); GPU memory staged through the worker's
// bounce buffers on the fake GPU (only the hardware is fake: UCP's staging
// protocol and the nvmeof transport run as they would with cuda_copy).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "ucp/api/file.h"
#include "ucp/fake_gpu.h"
#include "ucp/ucp_test_util.h"
#include "uct/base/component_loader.h"
#include "uct/nvmeof/nvmeof_test_util.h"

namespace mc::ucp::test {
namespace {

namespace nt = mc::uct::nvmeof::test;

constexpr size_t kFileSize = 1 << 20;

class UcpFiles : public testing::Test {
 protected:
  void SetUp() override {
    if (uct::find_component("nvmeof") == nullptr) GTEST_SKIP() << "nvmeof not built (liburing)";
    ASSERT_TRUE(dir_.ok());
    fake_gpu_state() = FakeGpuState{};
  }

  // A worker of a context with `tls` (and the fake GPU).
  void open_worker(const std::string& tls) {
    ctx_ = make_context(
        {{"MC_TLS", tls}, {"MC_RNDV_FRAG_SIZE", "host:512k,cuda:64k"}, {"MC_STAGING_DEPTH", "3"}},
        &sources_, {fake_gpu_component()});
    ASSERT_TRUE(ctx_);
    Result<std::unique_ptr<Worker>> w = Worker::create(*ctx_);
    ASSERT_TRUE(w.ok()) << w.status();
    worker_ = std::move(*w);
  }

  // A file of kFileSize pattern bytes of `seed`, opened.
  std::unique_ptr<File> make_file(const std::string& name, uint64_t seed, bool writable) {
    const std::string path = dir_.file(name);
    if (!nt::write_pattern_file(path, kFileSize, seed)) return nullptr;
    Result<std::unique_ptr<File>> f = worker_->file_open(path, writable);
    return f.ok() ? std::move(*f) : nullptr;
  }

  // Runs `io` to its end: its request's status, or file_io's error.
  Status run(const FileIo& io) {
    Result<std::shared_ptr<Request>> r = worker_->file_io(io);
    if (!r.ok()) return r.status();
    const bool done = spin_until([&] { return (*r)->completed(); }, [&] { worker_->progress(); });
    EXPECT_TRUE(done) << "the file request did not complete";
    return (*r)->status();
  }

  // Device memory of the fake GPU.
  std::unique_ptr<uct::MemHandle> vram(size_t n) {
    for (const MdEntry& md : ctx_->mds()) {
      if (md.name != "fake_gpu") continue;
      Result<std::unique_ptr<uct::MemHandle>> h =
          md.md->mem_alloc(n, uct::MemType::Cuda, uct::kAccessAll);
      return h.ok() ? std::move(*h) : nullptr;
    }
    return nullptr;
  }

  nt::TempDir dir_;
  ucs::config::Sources sources_;
  std::unique_ptr<Context> ctx_;
  std::unique_ptr<Worker> worker_;
};

TEST_F(UcpFiles, HostMemoryWritesAndReadsRunsOfTwoFiles) {
  ASSERT_NO_FATAL_FAILURE(open_worker("self"));
  std::unique_ptr<File> a = make_file("a", 1, true);
  std::unique_ptr<File> b = make_file("b", 2, true);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->length(), kFileSize);
  EXPECT_TRUE(a->writable());
  EXPECT_EQ(a->path(), dir_.file("a"));
  EXPECT_EQ(worker_->file_route(uct::MemType::Host).value(), FileRoute::Direct);

  // The tail of a (100 KiB, at an odd offset) and the head of b, from one buffer.
  constexpr size_t kTail = 100 * 1024 + 3, kHead = 300 * 1024;
  const std::vector<uint8_t> src = filled(kTail + kHead, 9);
  FileIo w;
  w.write = true;
  w.runs = {{a.get(), kFileSize - kTail, const_cast<uint8_t*>(src.data()), kTail},
            {b.get(), 0, const_cast<uint8_t*>(src.data()) + kTail, kHead}};
  ASSERT_EQ(run(w), Status::Ok);
  const std::vector<uint8_t> fa = nt::read_file(dir_.file("a"));
  const std::vector<uint8_t> fb = nt::read_file(dir_.file("b"));
  ASSERT_EQ(fa.size(), kFileSize);
  ASSERT_EQ(fb.size(), kFileSize);
  EXPECT_EQ(0, std::memcmp(fa.data() + kFileSize - kTail, src.data(), kTail));
  EXPECT_EQ(0, std::memcmp(fb.data(), src.data() + kTail, kHead));
  // Around the runs, the files are as they were.
  EXPECT_EQ(fa[kFileSize - kTail - 1], nt::pattern(1, kFileSize - kTail - 1));
  EXPECT_EQ(fb[kHead], nt::pattern(2, kHead));

  std::vector<uint8_t> back(kTail + kHead, 0);
  FileIo r = w;
  r.write = false;
  r.runs[0].buffer = back.data();
  r.runs[1].buffer = back.data() + kTail;
  ASSERT_EQ(run(r), Status::Ok);
  EXPECT_EQ(back, src);
}

TEST_F(UcpFiles, BadRunsAreRefusedWithoutTouchingTheFiles) {
  ASSERT_NO_FATAL_FAILURE(open_worker("self"));
  std::unique_ptr<File> rw = make_file("rw", 3, true);
  std::unique_ptr<File> ro = make_file("ro", 4, false);
  ASSERT_TRUE(rw && ro);
  EXPECT_FALSE(ro->writable());
  std::vector<uint8_t> buf(8192, 0xab);
  FileIo io;
  io.write = true;
  io.runs = {{rw.get(), kFileSize - 4096, buf.data(), 8192}};  // past the end
  EXPECT_EQ(run(io), Status::InvalidParam);
  io.runs = {{rw.get(), UINT64_MAX - 10, buf.data(), 100}};  // offset + length overflows
  EXPECT_EQ(run(io), Status::InvalidParam);
  io.runs = {{ro.get(), 0, buf.data(), 4096}};  // read-only
  EXPECT_EQ(run(io), Status::InvalidParam);
  io.runs = {{rw.get(), 0, buf.data(), 0}};  // empty
  EXPECT_EQ(run(io), Status::InvalidParam);
  io.runs.clear();
  EXPECT_EQ(run(io), Status::InvalidParam);
  {
    // A file of another worker: its key belongs to that worker's transport.
    Result<std::unique_ptr<Worker>> other = Worker::create(*ctx_);
    ASSERT_TRUE(other.ok());
    Result<std::unique_ptr<File>> theirs = (*other)->file_open(dir_.file("rw"), true);
    ASSERT_TRUE(theirs.ok());
    io.runs = {{theirs->get(), 0, buf.data(), 4096}};
    EXPECT_EQ(run(io), Status::InvalidParam);
  }
  EXPECT_EQ(nt::read_file(dir_.file("rw")), nt::pattern_bytes(3, 0, kFileSize));
  EXPECT_EQ(nt::read_file(dir_.file("ro")), nt::pattern_bytes(4, 0, kFileSize));
  // Reading the read-only file works.
  io.write = false;
  io.runs = {{ro.get(), 4096, buf.data(), 4096}};
  ASSERT_EQ(run(io), Status::Ok);
  buf.resize(4096);
  EXPECT_EQ(buf, nt::pattern_bytes(4, 4096, 4096));
  EXPECT_FALSE(worker_->file_open(dir_.file("missing"), false).ok());
}

TEST_F(UcpFiles, GpuMemoryGoesThroughBounceBuffers) {
  ASSERT_NO_FATAL_FAILURE(open_worker(std::string("self,") + kFakeGpuTl));
  std::unique_ptr<File> f = make_file("f", 5, true);
  ASSERT_TRUE(f);
  ASSERT_EQ(worker_->file_route(uct::MemType::Cuda).value(), FileRoute::Staged);
  // 300 KiB + 5 over 64 KiB fragments: five copies each way.
  constexpr size_t kLen = 300 * 1024 + 5;
  std::unique_ptr<uct::MemHandle> gpu = vram(2 * kLen);
  ASSERT_TRUE(gpu);
  auto* mem = static_cast<uint8_t*>(gpu->address());
  fill(mem, kLen, 11);
  FileIo io;
  io.write = true;
  io.mem_type = worker_->detect_mem_type(mem, kLen);
  ASSERT_EQ(io.mem_type, uct::MemType::Cuda);
  io.runs = {{f.get(), 4096, mem, kLen}};
  const size_t copies = fake_gpu_state().copies;
  ASSERT_EQ(run(io), Status::Ok);
  EXPECT_EQ(fake_gpu_state().copies - copies, 5u) << "one copy per fragment";
  const std::vector<uint8_t> back = nt::read_file(dir_.file("f"));
  ASSERT_EQ(back.size(), kFileSize);
  EXPECT_TRUE(matches(back.data() + 4096, kLen, 11));
  EXPECT_EQ(back[4095], nt::pattern(5, 4095));

  io.write = false;
  io.runs = {{f.get(), 4096, mem + kLen, kLen}};
  ASSERT_EQ(run(io), Status::Ok);
  EXPECT_TRUE(matches(mem + kLen, kLen, 11));

  // Staged runs must be one range of memory.
  io.runs = {{f.get(), 0, mem, 4096}, {f.get(), 8192, mem + 8192, 4096}};
  EXPECT_EQ(run(io), Status::InvalidParam);
  // A failed copy fails the request, after what is in flight has ended.
  fake_gpu_state().fault = FakeGpuFault::Async;
  fake_gpu_state().fault_at = fake_gpu_state().copies + 2;
  io.write = true;
  io.runs = {{f.get(), 0, mem, kLen}};
  EXPECT_EQ(run(io), Status::IoError);
}

TEST_F(UcpFiles, GpuMemoryWithoutACopyTransportHasNoRoute) {
  ASSERT_NO_FATAL_FAILURE(open_worker("self"));
  EXPECT_EQ(worker_->file_route(uct::MemType::Cuda).status(), Status::Unsupported);
  std::unique_ptr<File> f = make_file("f", 6, true);
  ASSERT_TRUE(f);
  std::vector<uint8_t> buf(4096);
  FileIo io;
  io.mem_type = uct::MemType::Cuda;
  io.runs = {{f.get(), 0, buf.data(), buf.size()}};
  EXPECT_EQ(run(io), Status::Unsupported);
}

}  // namespace
}  // namespace mc::ucp::test
