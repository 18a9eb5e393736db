// SPDX-License-Identifier: Apache-2.0
// White-box tests of the nvmeof I/O engines (io_uring and preadv/pwritev) on
// real files: queue depth, partial and failed requests, file sizing.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <memory>

#include "nvmeof_test_util.h"
#include "uct/nvmeof/nvmeof_file.h"
#include "uct/nvmeof/nvmeof_io.h"

namespace mc::uct::nvmeof::test {
namespace {

constexpr size_t kFileSize = 256 * 1024;

struct Outcome {
  bool called = false;
  Status status = Status::Ok;
};

std::unique_ptr<IoRequest> read_req(int fd, uint64_t offset, void* buf, size_t n, Outcome* out) {
  auto req = std::make_unique<IoRequest>();
  req->fd = fd;
  req->offset = offset;
  req->iov.push_back(iovec{buf, n});
  req->length = n;
  req->path = "test file";
  req->done = [out](Status s) {
    out->called = true;
    out->status = s;
  };
  return req;
}

// Progresses until `n` requests completed; a hang guard, not a timing check.
void drain(IoEngine& e, size_t n) {
  size_t done = 0;
  for (long spins = 0; done < n && spins < 100000000; ++spins) done += e.progress();
  ASSERT_EQ(done, n);
}

class NvmeofIoTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    ASSERT_TRUE(dir_.ok());
    path_ = dir_.file("data");
    ASSERT_TRUE(write_pattern_file(path_, kFileSize, 5));
    fd_ = ::open(path_.c_str(), O_RDWR);
    ASSERT_GE(fd_, 0);
  }
  void TearDown() override {
    if (fd_ >= 0) ::close(fd_);
  }
  std::unique_ptr<IoEngine> engine(unsigned qd) { return IoEngine::create(qd, GetParam()); }

  TempDir dir_;
  std::string path_;
  int fd_ = -1;
};

TEST_P(NvmeofIoTest, EngineIsTheOneAskedFor) {
  auto e = engine(8);
  EXPECT_STREQ(e->name(), GetParam() ? "io_uring" : "preadv/pwritev");
  EXPECT_EQ(e->queue_depth(), 8u);
}

TEST_P(NvmeofIoTest, QueueDepthBoundsRequestsInFlight) {
  for (unsigned qd : {1u, 4u}) {
    auto e = engine(qd);
    constexpr size_t kReqs = 64, kChunk = kFileSize / kReqs;
    std::vector<uint8_t> buf(kFileSize);
    std::vector<Outcome> out(kReqs);
    for (size_t i = 0; i < kReqs; ++i) {
      e->submit(read_req(fd_, i * kChunk, buf.data() + i * kChunk, kChunk, &out[i]));
      EXPECT_LE(e->in_flight(), qd);
    }
    drain(*e, kReqs);
    EXPECT_EQ(e->in_flight(), 0u);
    EXPECT_EQ(e->waiting(), 0u);
    // io_uring fills every slot as soon as requests wait; the fallback runs
    // one at a time. Neither ever exceeds the depth.
    EXPECT_EQ(e->max_in_flight(), GetParam() ? qd : 1u);
    for (const Outcome& o : out) EXPECT_TRUE(o.called && o.status == Status::Ok);
    EXPECT_EQ(buf, pattern_bytes(5, 0, kFileSize));
  }
}

TEST_P(NvmeofIoTest, ReadPastTheEndFailsAsShortRead) {
  auto e = engine(4);
  std::vector<uint8_t> buf(8192, 0xee);
  Outcome out;
  e->submit(read_req(fd_, kFileSize - 4096, buf.data(), buf.size(), &out));
  drain(*e, 1);
  EXPECT_TRUE(out.called);
  EXPECT_EQ(out.status, Status::IoError);
  // What was there was read before the end was hit.
  EXPECT_TRUE(std::equal(buf.begin(), buf.begin() + 4096,
                         pattern_bytes(5, kFileSize - 4096, 4096).begin()));
}

TEST_P(NvmeofIoTest, ReadOfADirectoryFailsWithItsErrno) {
  const int dfd = ::open(path_.substr(0, path_.rfind('/')).c_str(), O_RDONLY | O_DIRECTORY);
  ASSERT_GE(dfd, 0);
  auto e = engine(2);
  std::vector<uint8_t> buf(512);
  Outcome out;
  e->submit(read_req(dfd, 0, buf.data(), buf.size(), &out));
  drain(*e, 1);
  ::close(dfd);
  EXPECT_EQ(out.status, Status::IoError);  // EISDIR, logged
}

TEST_P(NvmeofIoTest, ScatteredWriteLandsInOrder) {
  auto e = engine(4);
  std::vector<uint8_t> a = pattern_bytes(9, 0, 1000), b = pattern_bytes(9, 1000, 3000);
  auto req = std::make_unique<IoRequest>();
  req->fd = fd_;
  req->write = true;
  req->offset = 777;
  req->iov = {iovec{a.data(), a.size()}, iovec{b.data(), b.size()}};
  req->length = 4000;
  Outcome out;
  req->done = [&out](Status s) {
    out.called = true;
    out.status = s;
  };
  e->submit(std::move(req));
  drain(*e, 1);
  ASSERT_EQ(out.status, Status::Ok);
  const std::vector<uint8_t> file = read_file(path_);
  ASSERT_EQ(file.size(), kFileSize);
  EXPECT_TRUE(
      std::equal(file.begin() + 777, file.begin() + 4777, pattern_bytes(9, 0, 4000).begin()));
  EXPECT_TRUE(std::equal(file.begin(), file.begin() + 777, pattern_bytes(5, 0, 777).begin()));
}

TEST(NvmeofIoFallback, FailedIoUringSetupFallsBackToPreadv) {
  // io_uring refuses more than 32768 entries (EINVAL): the engine logs why
  // and moves the data with preadv/pwritev instead.
  auto e = IoEngine::create(1u << 16, true);
  EXPECT_STREQ(e->name(), "preadv/pwritev");
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  ASSERT_TRUE(write_pattern_file(dir.file("f"), 4096, 8));
  const int fd = ::open(dir.file("f").c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  std::vector<uint8_t> buf(4096);
  Outcome out;
  e->submit(read_req(fd, 0, buf.data(), buf.size(), &out));
  drain(*e, 1);
  ::close(fd);
  EXPECT_EQ(out.status, Status::Ok);
  EXPECT_EQ(buf, pattern_bytes(8, 0, 4096));
}

INSTANTIATE_TEST_SUITE_P(Engines, NvmeofIoTest, ::testing::Values(true, false),
                         [](const auto& info) { return info.param ? "io_uring" : "sync"; });

TEST(NvmeofFile, SizesAlignmentAndRefusals) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  ASSERT_TRUE(write_pattern_file(dir.file("f"), 10000, 1));
  auto f = NvmeofFile::open(dir.file("f"), true, true);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ((*f)->open_size(), 10000u);
  EXPECT_FALSE((*f)->block_device());
  EXPECT_EQ((*f)->alignment(), 4096u);
  AlignedBuffer buf(8192);
  iovec ok{buf.data, 8192}, odd{buf.data + 1, 4096}, short_len{buf.data, 100};
  if ((*f)->has_direct()) {
    EXPECT_TRUE((*f)->direct_ok(4096, &ok, 1));
    EXPECT_FALSE((*f)->direct_ok(4096, &odd, 1));
    EXPECT_FALSE((*f)->direct_ok(4096, &short_len, 1));
    EXPECT_FALSE((*f)->direct_ok(100, &ok, 1));
  }
  ASSERT_EQ(truncate(dir.file("f").c_str(), 3000), 0);
  auto now = (*f)->size();
  ASSERT_TRUE(now.ok());
  EXPECT_EQ(*now, 3000u);

  EXPECT_EQ(NvmeofFile::open(dir.file("missing"), false, false).status(), Status::NoElem);
  ASSERT_TRUE(write_pattern_file(dir.file("empty"), 0, 1));
  EXPECT_EQ(NvmeofFile::open(dir.file("empty"), false, false).status(), Status::InvalidParam);
  EXPECT_EQ(NvmeofFile::open(dir.file(""), false, false).status(), Status::InvalidParam);  // a dir
}

}  // namespace
}  // namespace mc::uct::nvmeof::test
