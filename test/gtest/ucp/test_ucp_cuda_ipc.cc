// SPDX-License-Identifier: Apache-2.0
// UCP's lane for GPU memory between two processes of one host: over the
// fake CUDA driver (MC_CUDA_DRIVER), with tcp beside cuda_ipc, the endpoint
// takes cuda_ipc as its GPU lane (rma-gpu) and a put / get between the two
// processes' fake GPU memory goes over it, data checked in the other
// process; a put from GPU memory into the peer's host memory is staged
// (cuda_copy), as no cuda_ipc key covers host memory.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <sstream>

#include "common/pipe_util.h"
#include "ucp/api/ucp.h"
#include "ucp/ucp_test_util.h"
#include "uct/base/component_loader.h"
#include "uct/ib/fake_gpu.h"

namespace mc::ucp::test {
namespace {

using ucs::Result;
using ucs::Status;
using uct::test::FakeCuda;
using uct::test::FakeGpuBuffer;

constexpr size_t kSize = 1 << 20;

std::map<std::string, std::string> env() {
  return {{"MC_TLS", "tcp,cuda_ipc,cuda_copy"},
          {"MC_NET_DEVICES", "lo"},
          {"MC_CUDA_DRIVER", FakeCuda::path()},
          {"MC_TRANSFER_TIMEOUT", "30s"}};
}

std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(i * 5 + seed);
  return v;
}

// The child: a context, a worker and a fake GPU buffer and a host buffer,
// registered; publishes the address and both rkeys; 'C' seed: is the GPU
// buffer that pattern? 'H' seed: the host buffer? 'Q': quit.
int child_main(int cmd_fd, int reply_fd) {
  ucs::config::Sources sources;
  std::unique_ptr<Context> ctx = make_context(env(), &sources);
  if (!ctx) return 2;
  Result<std::unique_ptr<Worker>> worker = Worker::create(*ctx);
  if (!worker.ok()) return 3;
  FakeGpuBuffer gpu(kSize);
  std::vector<uint8_t> host(kSize, 0);
  if (!gpu.ok()) return 4;
  Result<std::unique_ptr<MemHandle>> gm = MemHandle::map(*ctx, gpu.device, kSize);
  Result<std::unique_ptr<MemHandle>> hm = MemHandle::map(*ctx, host.data(), kSize);
  if (!gm.ok() || !hm.ok()) return 5;
  Result<std::vector<uint8_t>> gk = (*gm)->rkey_pack();
  Result<std::vector<uint8_t>> hk = (*hm)->rkey_pack();
  const uint64_t addrs[2] = {gpu.address(), reinterpret_cast<uintptr_t>(host.data())};
  if (!gk.ok() || !hk.ok() || !mc::test::write_blob(reply_fd, (*worker)->address()) ||
      !mc::test::write_blob(reply_fd, *gk) || !mc::test::write_blob(reply_fd, *hk) ||
      !mc::test::write_all(reply_fd, addrs, sizeof(addrs))) {
    return 6;
  }
  for (;;) {
    (*worker)->progress();
    pollfd p{cmd_fd, POLLIN, 0};
    if (poll(&p, 1, 0) <= 0) continue;
    char c[2];
    if (!mc::test::read_all(cmd_fd, c, 2)) return 7;
    if (c[0] == 'Q') return 0;
    const std::vector<uint8_t> want = pattern(kSize, static_cast<uint8_t>(c[1]));
    const uint8_t* have = c[0] == 'C' ? gpu.view : host.data();
    const char ok = std::memcmp(have, want.data(), kSize) == 0 ? 'Y' : 'N';
    if (!mc::test::write_all(reply_fd, &ok, 1)) return 8;
  }
}

class UcpCudaIpc : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!uct::find_component("cuda_ipc") || !uct::find_component("cuda_copy")) {
      GTEST_SKIP() << "no CUDA modules (configure --without-cuda)";
    }
    ASSERT_TRUE(FakeCuda::get().ok()) << FakeCuda::path();
    // A component lists its memory domains from the process's configuration
    // (both processes: set before the fork).
    setenv("MC_CUDA_DRIVER", FakeCuda::path().c_str(), 1);
    int cmd[2], reply[2];
    ASSERT_EQ(pipe(cmd), 0);
    ASSERT_EQ(pipe(reply), 0);
    pid_ = fork();
    ASSERT_GE(pid_, 0);
    if (pid_ == 0) {
      close(cmd[1]);
      close(reply[0]);
      _exit(child_main(cmd[0], reply[1]));
    }
    close(cmd[0]);
    close(reply[1]);
    cmd_fd_ = cmd[1];
    reply_fd_ = reply[0];
    ctx_ = make_context(env(), &sources_);
    ASSERT_TRUE(ctx_);
    Result<std::unique_ptr<Worker>> w = Worker::create(*ctx_);
    ASSERT_TRUE(w.ok());
    worker_ = std::move(*w);
    std::vector<uint8_t> address, gk, hk;
    ASSERT_TRUE(mc::test::read_blob(reply_fd_, &address)) << "the child did not start";
    ASSERT_TRUE(mc::test::read_blob(reply_fd_, &gk));
    ASSERT_TRUE(mc::test::read_blob(reply_fd_, &hk));
    ASSERT_TRUE(mc::test::read_all(reply_fd_, addrs_, sizeof(addrs_)));
    Result<std::unique_ptr<Endpoint>> ep = worker_->ep_create(address);
    ASSERT_TRUE(ep.ok());
    ep_ = std::move(*ep);
    Result<std::unique_ptr<Rkey>> g = ep_->rkey_unpack(gk);
    Result<std::unique_ptr<Rkey>> h = ep_->rkey_unpack(hk);
    ASSERT_TRUE(g.ok() && h.ok());
    gpu_rkey_ = std::move(*g);
    host_rkey_ = std::move(*h);
  }

  void TearDown() override {
    gpu_rkey_.reset();
    host_rkey_.reset();
    ep_.reset();
    worker_.reset();
    ctx_.reset();
    if (pid_ > 0) {
      (void)mc::test::write_all(cmd_fd_, "Q", 2);
      int st = 0;
      EXPECT_EQ(waitpid(pid_, &st, 0), pid_);
      EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "child status " << st;
    }
    if (cmd_fd_ >= 0) close(cmd_fd_);
    if (reply_fd_ >= 0) close(reply_fd_);
    unsetenv("MC_CUDA_DRIVER");
  }

  Status wait(Result<std::shared_ptr<Request>> r) {
    if (!r.ok()) return r.status();
    while (!(*r)->completed()) worker_->progress();
    return (*r)->status();
  }

  bool child_has(char what, uint8_t seed) {
    const char c[2] = {what, static_cast<char>(seed)};
    char ok = 0;
    return mc::test::write_all(cmd_fd_, c, 2) && mc::test::read_all(reply_fd_, &ok, 1) && ok == 'Y';
  }

  ucs::config::Sources sources_;
  pid_t pid_ = -1;
  int cmd_fd_ = -1, reply_fd_ = -1;
  uint64_t addrs_[2] = {0, 0};
  std::unique_ptr<Context> ctx_;
  std::unique_ptr<Worker> worker_;
  std::unique_ptr<Endpoint> ep_;
  std::unique_ptr<Rkey> gpu_rkey_, host_rkey_;
};

TEST_F(UcpCudaIpc, GpuToGpuGoesOverTheCudaIpcLane) {
  std::ostringstream os;
  ep_->print(os);
  EXPECT_NE(os.str().find("cuda_ipc/cuda -> cuda_ipc/cuda [rma-gpu]"), std::string::npos)
      << os.str();
  FakeGpuBuffer src(kSize), dst(kSize);
  ASSERT_TRUE(src.ok() && dst.ok());
  const std::vector<uint8_t> data = pattern(kSize, 9);
  std::memcpy(src.view, data.data(), kSize);
  RequestParams p;
  p.mem_type = uct::MemType::Cuda;
  const size_t copies = FakeCuda::get().copies();
  ASSERT_EQ(wait(ep_->put_nbx(src.device, kSize, addrs_[0], *gpu_rkey_, p)), Status::Ok);
  EXPECT_TRUE(child_has('C', 9));
  ASSERT_EQ(wait(ep_->get_nbx(dst.device, kSize, addrs_[0], *gpu_rkey_, p)), Status::Ok);
  EXPECT_EQ(std::memcmp(dst.view, data.data(), kSize), 0);
  // Device to device by the driver in this process, nothing through tcp.
  EXPECT_GE(FakeCuda::get().copies(), copies + 2);
}

TEST_F(UcpCudaIpc, GpuToThePeersHostMemoryIsStagedNotSentOverCudaIpc) {
  FakeGpuBuffer src(kSize);
  ASSERT_TRUE(src.ok());
  const std::vector<uint8_t> data = pattern(kSize, 4);
  std::memcpy(src.view, data.data(), kSize);
  RequestParams p;
  p.mem_type = uct::MemType::Cuda;
  ASSERT_EQ(wait(ep_->put_nbx(src.device, kSize, addrs_[1], *host_rkey_, p)), Status::Ok);
  EXPECT_TRUE(child_has('H', 4));
}

}  // namespace
}  // namespace mc::ucp::test
