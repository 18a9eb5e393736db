// SPDX-License-Identifier: Apache-2.0
// UCP's staging protocol: put and get of GPU memory that no network lane can
// access, through host bounce buffers, over tcp and sm, in one process and
// across two; fragment sizes below, at and above MC_RNDV_FRAG_SIZE; the
// knob's parse errors; the no-protocol error without a memory-type
// transport; copy failures ending the request. The GPU is the fake of
// fake_gpu.h (this machine has none); test/gpu/run.sh runs the CudaStaging
// cases below on real cuda_copy memory.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <sstream>

#include "common/log_capture.h"
#include "common/pipe_util.h"
#include "ucp/api/ucp.h"
#include "ucp/core/endpoint.h"
#include "ucp/core/worker.h"
#include "ucp/fake_gpu.h"
#include "ucp/proto/staging_op.h"
#include "ucp/ucp_test_util.h"
#include "uct/base/component_loader.h"

namespace mc::ucp::test {
namespace {

using ucs::Result;
using ucs::Status;

constexpr size_t kFrag = 64 << 10;
constexpr size_t kRemote = 2 << 20;

std::vector<size_t> staged_sizes() {
  return {1, 4095, kFrag - 1, kFrag, kFrag + 1, 3 * kFrag + 123, kFrag * 9 + 7, kRemote};
}

std::unique_ptr<Context> fake_context(const std::map<std::string, std::string>& env,
                                      ucs::config::Sources* sources) {
  return make_context(env, sources, {fake_gpu_component()});
}

std::map<std::string, std::string> staging_env(const std::string& tls) {
  return {{"MC_TLS", tls},
          {"MC_NET_DEVICES", "lo"},
          {"MC_TRANSFER_TIMEOUT", "30s"},
          {"MC_RNDV_FRAG_SIZE", "host:512k,cuda:64k"},
          {"MC_STAGING_DEPTH", "3"}};
}

// Two workers of one context with the fake GPU: an endpoint from the first
// to the second, whose host buffer is the remote side.
class UcpStaging : public testing::TestWithParam<std::string>, protected UcpPair {
 protected:
  void SetUp() override { open(GetParam() + "," + kFakeGpuTl); }

  void open(const std::string& tls) {
    if (!uct::find_component(GetParam())) GTEST_SKIP() << GetParam() << " is not available";
    fake_gpu_state() = FakeGpuState{};
    ctx_ = fake_context(staging_env(tls), &sources_);
    ASSERT_NO_FATAL_FAILURE(open_workers());
    remote_.assign(kRemote, 0);
    ASSERT_NO_FATAL_FAILURE(map_remote(remote_, &remote_mh_, &rkey_));
    vram_ = fake_vram(*ctx_, kRemote);
    ASSERT_TRUE(vram_);
  }

  void TearDown() override {
    rkey_.reset();
    ep_.reset();
    remote_mh_.reset();
    vram_.reset();
    close_pair();
    fake_gpu_state() = FakeGpuState{};
  }

  Status rma(proto::Op op, size_t n, uct::MemType mem = uct::MemType::Cuda) {
    RequestParams params;
    params.mem_type = mem;
    const uint64_t raddr = reinterpret_cast<uintptr_t>(remote_.data());
    return op == proto::Op::Put ? wait(ep_->put_nbx(vram_->address(), n, raddr, *rkey_, params))
                                : wait(ep_->get_nbx(vram_->address(), n, raddr, *rkey_, params));
  }

  uint8_t* vram() const { return static_cast<uint8_t*>(vram_->address()); }

  std::vector<uint8_t> remote_;
  std::unique_ptr<MemHandle> remote_mh_;
  std::unique_ptr<Rkey> rkey_;
  std::unique_ptr<uct::MemHandle> vram_;
};

TEST_P(UcpStaging, PutThenGetEverySize) {
  for (size_t n : staged_sizes()) {
    SCOPED_TRACE("size " + std::to_string(n));
    fill(vram(), n, n);
    std::memset(remote_.data(), 0, kRemote);
    const size_t copies = fake_gpu_state().copies;
    ASSERT_EQ(rma(proto::Op::Put, n), Status::Ok);
    ASSERT_EQ(wait(ep_->flush()), Status::Ok);  // a put completes locally first
    EXPECT_TRUE(matches(remote_.data(), n, n));
    if (n < kRemote) {
      EXPECT_EQ(remote_[n], 0) << "wrote past";
    }
    EXPECT_EQ(fake_gpu_state().copies - copies, (n + kFrag - 1) / kFrag) << "one copy a fragment";
    fill(remote_.data(), n, n + 1);
    std::memset(vram(), 0, kRemote);
    ASSERT_EQ(rma(proto::Op::Get, n), Status::Ok);
    EXPECT_TRUE(matches(vram(), n, n + 1));
    if (n < kRemote) {
      EXPECT_EQ(vram()[n], 0) << "wrote past";
    }
  }
  // The pipeline ran: several fragments' copies were waiting at once.
  EXPECT_GE(fake_gpu_state().max_queued, 2u);
}

TEST_P(UcpStaging, DetectedMemoryType) {
  // Unknown: the fake md recognises its allocation as cuda memory.
  EXPECT_EQ(workers_[0]->detect_mem_type(vram(), 100), uct::MemType::Cuda);
  EXPECT_EQ(workers_[0]->detect_mem_type(remote_.data(), 100), uct::MemType::Host);
  const size_t n = 2 * kFrag + 5;
  fill(vram(), n, 9);
  ASSERT_EQ(rma(proto::Op::Put, n, uct::MemType::Unknown), Status::Ok);
  ASSERT_EQ(wait(ep_->flush()), Status::Ok);
  EXPECT_TRUE(matches(remote_.data(), n, 9));
  EXPECT_EQ(fake_gpu_state().copies, 3u);
}

TEST_P(UcpStaging, ProtocolExplained) {
  std::ostringstream os;
  ep_->print(os);
  const std::string text = os.str();
  EXPECT_NE(text.find("put staged via " + std::string(kFakeGpuTl) +
                      "/gpu0 (frag 64 KiB, 3 in "
                      "flight)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("get staged via"), std::string::npos) << text;
  EXPECT_NE(text.find("am: unsupported"), std::string::npos) << text;
  const proto::Staging* st =
      ucp::impl(*ep_).protocols().staging(proto::Op::Put, uct::MemType::Cuda);
  ASSERT_NE(st, nullptr);
  EXPECT_EQ(st->frag_size, kFrag);
  EXPECT_EQ(ucp::impl(*ep_).protocols().staging(proto::Op::Am, uct::MemType::Cuda), nullptr);
  EXPECT_EQ(ucp::impl(*ep_).protocols().staging(proto::Op::Put, uct::MemType::Host), nullptr);
}

TEST_P(UcpStaging, CopyFailsAsynchronously) {
  for (proto::Op op : {proto::Op::Put, proto::Op::Get}) {
    fake_gpu_state().fault = FakeGpuFault::Async;
    fake_gpu_state().fault_at = fake_gpu_state().copies + 2;
    EXPECT_EQ(rma(op, 5 * kFrag), Status::IoError) << proto::op_name(op);
  }
  // The worker is sound afterwards: the bounce buffers came back.
  fake_gpu_state().fault = FakeGpuFault::None;
  fill(vram(), 4 * kFrag, 4);
  ASSERT_EQ(rma(proto::Op::Put, 4 * kFrag), Status::Ok);
  ASSERT_EQ(wait(ep_->flush()), Status::Ok);
  EXPECT_TRUE(matches(remote_.data(), 4 * kFrag, 4));
}

// The completion rule: the request of a staged put or get whose second copy
// fails completes only once the copies of the other fragments in flight
// then have completed too; none is left to write the caller's buffer after.
TEST_P(UcpStaging, AFailedRequestCompletesOnceItsOtherCopiesHave) {
  for (proto::Op op : {proto::Op::Put, proto::Op::Get}) {
    FakeGpuState& st = fake_gpu_state();
    st.fault = FakeGpuFault::Async;
    st.fault_at = st.copies + 2;
    size_t pending_at_completion = SIZE_MAX;
    RequestParams params;
    params.mem_type = uct::MemType::Cuda;
    params.callback = [&](Status) { pending_at_completion = st.copies - st.completed; };
    const uint64_t raddr = reinterpret_cast<uintptr_t>(remote_.data());
    auto r = op == proto::Op::Put
                 ? ep_->put_nbx(vram_->address(), 5 * kFrag, raddr, *rkey_, params)
                 : ep_->get_nbx(vram_->address(), 5 * kFrag, raddr, *rkey_, params);
    EXPECT_EQ(wait(std::move(r)), Status::IoError) << proto::op_name(op);
    EXPECT_GE(st.max_queued, 2u) << "the copies of two fragments were never in flight at once";
    EXPECT_EQ(pending_at_completion, 0u) << proto::op_name(op);
  }
}

TEST_P(UcpStaging, CopyFailsWhenPosted) {
  for (proto::Op op : {proto::Op::Put, proto::Op::Get}) {
    fake_gpu_state().fault = FakeGpuFault::Post;
    fake_gpu_state().fault_at = fake_gpu_state().copies + 1;
    EXPECT_EQ(rma(op, 3 * kFrag + 1), Status::IoError) << proto::op_name(op);
  }
  fake_gpu_state().fault = FakeGpuFault::None;
  fill(remote_.data(), kFrag, 5);
  ASSERT_EQ(rma(proto::Op::Get, kFrag), Status::Ok);
  EXPECT_TRUE(matches(vram(), kFrag, 5));
}

TEST_P(UcpStaging, CancelAndEndpointGoneLeaveThePoolWhole) {
  RequestParams params;
  params.mem_type = uct::MemType::Cuda;
  const uint64_t raddr = reinterpret_cast<uintptr_t>(remote_.data());
  // Canceled with copies in flight: Canceled, and its buffers come back.
  Result<std::shared_ptr<Request>> r =
      ep_->put_nbx(vram_->address(), 8 * kFrag, raddr, *rkey_, params);
  ASSERT_TRUE(r.ok());
  (*r)->cancel();
  EXPECT_EQ(wait(r), Status::Canceled);
  // The endpoint destroyed with a staged get's copies and sends in flight.
  r = ep_->get_nbx(vram_->address(), 8 * kFrag, raddr, *rkey_, params);
  ASSERT_TRUE(r.ok());
  workers_[0]->progress();
  rkey_.reset();
  ep_.reset();
  EXPECT_TRUE((*r)->completed());
  for (int i = 0; i < 100; ++i) {
    for (auto& w : workers_) w->progress();
  }
  // A new endpoint stages through the same pool: every buffer is free.
  Result<std::unique_ptr<Endpoint>> ep = workers_[0]->ep_create(workers_[1]->address());
  ASSERT_TRUE(ep.ok());
  ep_ = std::move(*ep);
  Result<std::vector<uint8_t>> packed = remote_mh_->rkey_pack();
  ASSERT_TRUE(packed.ok());
  Result<std::unique_ptr<Rkey>> rk = ep_->rkey_unpack(*packed);
  ASSERT_TRUE(rk.ok());
  rkey_ = std::move(*rk);
  fill(vram(), 6 * kFrag, 6);
  ASSERT_EQ(rma(proto::Op::Put, 6 * kFrag), Status::Ok);
  ASSERT_EQ(wait(ep_->flush()), Status::Ok);
  EXPECT_TRUE(matches(remote_.data(), 6 * kFrag, 6));
}

TEST_P(UcpStaging, HostMemoryIsNotStaged) {
  // The default memory type, host: the fast path, no copy.
  fill(remote_.data(), 1000, 3);
  std::vector<uint8_t> local(1000, 0);
  const uint64_t raddr = reinterpret_cast<uintptr_t>(remote_.data());
  ASSERT_EQ(wait(ep_->get_nbx(local.data(), local.size(), raddr, *rkey_)), Status::Ok);
  EXPECT_TRUE(matches(local.data(), local.size(), 3));
  EXPECT_EQ(fake_gpu_state().copies, 0u);
}

// Without a memory-type transport: the clear no-protocol error.
class UcpStagingMissing : public UcpStaging {
 protected:
  void SetUp() override { open(GetParam()); }
};

TEST_P(UcpStagingMissing, NoMemoryTypeTransport) {
  mc::test::LogCapture log(google::GLOG_ERROR);
  EXPECT_EQ(rma(proto::Op::Put, 1000), Status::Unsupported);
  EXPECT_EQ(rma(proto::Op::Get, 1000), Status::Unsupported);
  EXPECT_NE(log.text().find("no memory-type transport"), std::string::npos) << log.text();
  EXPECT_EQ(ucp::impl(*ep_).protocols().staging(proto::Op::Put, uct::MemType::Cuda), nullptr);
  std::ostringstream os;
  ep_->print(os);
  EXPECT_NE(os.str().find("cuda memory: unsupported"), std::string::npos) << os.str();
}

INSTANTIATE_TEST_SUITE_P(Tl, UcpStaging, testing::Values("tcp", "sm"));
INSTANTIATE_TEST_SUITE_P(Tl, UcpStagingMissing, testing::Values("tcp", "sm"));

TEST(UcpStagingConfig, FragSizeKnob) {
  for (const char* bad :
       {"gpu:4m", "cuda", "cuda:", "cuda:abc", "cuda:1k", "cuda:4m,cuda:1m", ":4m", "cuda:2g"}) {
    ucs::config::Sources sources;
    EXPECT_EQ(fake_context({{"MC_RNDV_FRAG_SIZE", bad}}, &sources), nullptr) << bad;
  }
  ucs::config::Sources sources;
  std::unique_ptr<Context> ctx =
      fake_context({{"MC_RNDV_FRAG_SIZE", "Host:1m, CUDA:256k"}}, &sources);
  ASSERT_TRUE(ctx);
  EXPECT_EQ(rndv_frag_size(ctx->config(), uct::MemType::Host), size_t{1} << 20);
  EXPECT_EQ(rndv_frag_size(ctx->config(), uct::MemType::Cuda), size_t{256} << 10);
  EXPECT_EQ(rndv_frag_size(ctx->config(), uct::MemType::CudaManaged), size_t{4} << 20);
  ucs::config::Sources dflt;
  ctx = fake_context({}, &dflt);
  ASSERT_TRUE(ctx);
  EXPECT_EQ(rndv_frag_size(ctx->config(), uct::MemType::Host), size_t{512} << 10);
  EXPECT_EQ(rndv_frag_size(ctx->config(), uct::MemType::Cuda), size_t{4} << 20);
  EXPECT_EQ(ctx->config().staging_depth, 4u);
  ucs::config::Sources zero;
  EXPECT_EQ(fake_context({{"MC_STAGING_DEPTH", "0"}}, &zero), nullptr);
}

// Across two processes: a forked child serves a host buffer (no GPU, no
// fake); the parent stages its fake device memory to it and back.
int child_main(const std::map<std::string, std::string>& env, int cmd_fd, int reply_fd) {
  TargetSide t;
  if (const int rc = t.open(env, kRemote); rc != 0) return rc;
  if (const int rc = t.publish(reply_fd); rc != 0) return rc;
  std::vector<uint8_t>& buffer = t.buffer;
  for (;;) {
    t.worker->progress();
    if (!mc::test::readable(cmd_fd)) continue;
    uint64_t c[3];  // op ('C' check, 'F' fill, 'Q' quit), length, seed
    if (!mc::test::read_all(cmd_fd, c, sizeof(c))) return 7;
    if (c[0] == 'Q') return 0;
    if (c[1] > kRemote) return 8;
    char ok = 'Y';
    if (c[0] == 'C') ok = matches(buffer.data(), c[1], c[2]) ? 'Y' : 'N';
    if (c[0] == 'F') fill(buffer.data(), c[1], c[2]);
    if (!mc::test::write_all(reply_fd, &ok, 1)) return 9;
  }
}

class UcpStagingTwoProc : public testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (!uct::find_component(GetParam())) GTEST_SKIP() << GetParam() << " is not available";
    fake_gpu_state() = FakeGpuState{};
    int cmd[2], reply[2];
    ASSERT_EQ(pipe(cmd), 0);
    ASSERT_EQ(pipe(reply), 0);
    pid_ = fork();
    ASSERT_GE(pid_, 0);
    if (pid_ == 0) {
      close(cmd[1]);
      close(reply[0]);
      _exit(child_main(staging_env(GetParam()), cmd[0], reply[1]));
    }
    close(cmd[0]);
    close(reply[1]);
    cmd_fd_ = cmd[1];
    reply_fd_ = reply[0];
    ctx_ = fake_context(staging_env(GetParam() + "," + kFakeGpuTl), &sources_);
    ASSERT_TRUE(ctx_);
    Result<std::unique_ptr<Worker>> w = Worker::create(*ctx_);
    ASSERT_TRUE(w.ok());
    worker_ = std::move(*w);
    std::vector<uint8_t> address, rkey;
    ASSERT_TRUE(mc::test::read_blob(reply_fd_, &address)) << "the child did not start";
    ASSERT_TRUE(mc::test::read_blob(reply_fd_, &rkey));
    ASSERT_TRUE(mc::test::read_all(reply_fd_, &base_, 8));
    Result<std::unique_ptr<Endpoint>> ep = worker_->ep_create(address);
    ASSERT_TRUE(ep.ok());
    ep_ = std::move(*ep);
    Result<std::unique_ptr<Rkey>> rk = ep_->rkey_unpack(rkey);
    ASSERT_TRUE(rk.ok());
    rkey_ = std::move(*rk);
    vram_ = fake_vram(*ctx_, kRemote);
    ASSERT_TRUE(vram_);
  }

  void TearDown() override {
    if (pid_ > 0) {
      const uint64_t q[3] = {'Q', 0, 0};
      (void)mc::test::write_all(cmd_fd_, q, sizeof(q));
    }
    rkey_.reset();
    ep_.reset();
    vram_.reset();
    worker_.reset();
    ctx_.reset();
    if (pid_ > 0) {
      int st = 0;
      EXPECT_EQ(waitpid(pid_, &st, 0), pid_);
      EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "child status " << st;
    }
    if (cmd_fd_ >= 0) close(cmd_fd_);
    if (reply_fd_ >= 0) close(reply_fd_);
  }

  bool ask(char op, uint64_t len, uint64_t seed) {
    const uint64_t c[3] = {static_cast<uint64_t>(op), len, seed};
    if (!mc::test::write_all(cmd_fd_, c, sizeof(c))) return false;
    while (!mc::test::readable(reply_fd_)) worker_->progress();
    char ok = 0;
    return mc::test::read_all(reply_fd_, &ok, 1) && ok == 'Y';
  }

  Status wait(Result<std::shared_ptr<Request>> r) {
    if (!r.ok()) return r.status();
    while (!(*r)->completed()) worker_->progress();
    return (*r)->status();
  }

  uint8_t* vram() const { return static_cast<uint8_t*>(vram_->address()); }

  pid_t pid_ = -1;
  int cmd_fd_ = -1;
  int reply_fd_ = -1;
  uint64_t base_ = 0;
  ucs::config::Sources sources_;
  std::unique_ptr<Context> ctx_;
  std::unique_ptr<Worker> worker_;
  std::unique_ptr<Endpoint> ep_;
  std::unique_ptr<Rkey> rkey_;
  std::unique_ptr<uct::MemHandle> vram_;
};

TEST_P(UcpStagingTwoProc, PutThenGetEverySize) {
  RequestParams params;
  params.mem_type = uct::MemType::Cuda;
  for (size_t n : staged_sizes()) {
    SCOPED_TRACE("size " + std::to_string(n));
    fill(vram(), n, n + 7);
    ASSERT_EQ(wait(ep_->put_nbx(vram(), n, base_, *rkey_, params)), Status::Ok);
    ASSERT_EQ(wait(ep_->flush()), Status::Ok);
    EXPECT_TRUE(ask('C', n, n + 7));
    ASSERT_TRUE(ask('F', n, n + 8));
    std::memset(vram(), 0, kRemote);
    ASSERT_EQ(wait(ep_->get_nbx(vram(), n, base_, *rkey_, params)), Status::Ok);
    EXPECT_TRUE(matches(vram(), n, n + 8));
  }
  EXPECT_GE(fake_gpu_state().max_queued, 2u);
}

INSTANTIATE_TEST_SUITE_P(Tl, UcpStagingTwoProc, testing::Values("tcp", "sm"));

}  // namespace
}  // namespace mc::ucp::test
