// SPDX-License-Identifier: Apache-2.0
// Remote staging: a put or get of a peer's GPU memory that no lane reaches
// (tcp, sm), staged by the peer through its bounce buffers; from host
// memory and from (fake) GPU memory, at sizes from 8 bytes to several
// fragments, in one process and across two; the target's checks (memory
// not registered, outside the registration: an error, nothing written); a
// peer killed mid-operation; the codecs and the packed rkey's memory type.
// The GPU is the fake of fake_gpu.h.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <sstream>

#include "common/log_capture.h"
#include "common/pipe_util.h"
#include "ucp/api/ucp.h"
#include "ucp/core/endpoint.h"
#include "ucp/core/rkey_container.h"
#include "ucp/core/worker.h"
#include "ucp/fake_gpu.h"
#include "ucp/proto/am_wire.h"
#include "ucp/proto/remote_staging.h"
#include "ucp/ucp_test_util.h"
#include "uct/base/component_loader.h"

namespace mc::ucp::test::remote_staging {
namespace {

using ucs::Result;
using ucs::Status;

constexpr size_t kFrag = 64 << 10;
constexpr size_t kVram = 2 << 20;

std::map<std::string, std::string> env_of(const std::string& tl, const std::string& timeout) {
  return {{"MC_TLS", tl + "," + kFakeGpuTl},
          {"MC_NET_DEVICES", "lo"},
          {"MC_TRANSFER_TIMEOUT", timeout},
          {"MC_LANE_RECONNECT_INTERVAL", "off"},
          {"MC_RNDV_FRAG_SIZE", "host:512k,cuda:64k"},
          {"MC_STAGING_DEPTH", "3"}};
}

// One context with the fake GPU, two workers: the second's fake GPU memory,
// registered through UCP, is the remote side.
class UcpRemoteStaging : public testing::TestWithParam<std::string>, protected UcpPair {
 protected:
  void SetUp() override {
    if (!uct::find_component(GetParam())) GTEST_SKIP() << GetParam() << " is not available";
    fake_gpu_state() = FakeGpuState{};
    ctx_ = make_context(env_of(GetParam(), "20s"), &sources_, {fake_gpu_component()});
    ASSERT_NO_FATAL_FAILURE(open_workers());
    vram_ = fake_vram(*ctx_, kVram);
    local_vram_ = fake_vram(*ctx_, kVram);
    ASSERT_TRUE(vram_ && local_vram_);
    Result<std::unique_ptr<MemHandle>> mh = MemHandle::map(*ctx_, vram_->address(), kVram);
    ASSERT_TRUE(mh.ok());
    vram_mh_ = std::move(*mh);
    Result<std::vector<uint8_t>> packed = vram_mh_->rkey_pack();
    ASSERT_TRUE(packed.ok());
    Result<std::unique_ptr<Rkey>> rk = ep_->rkey_unpack(*packed);
    ASSERT_TRUE(rk.ok());
    rkey_ = std::move(*rk);
  }

  void TearDown() override {
    rkey_.reset();
    ep_.reset();
    vram_mh_.reset();
    vram_.reset();
    local_vram_.reset();
    close_pair();
    fake_gpu_state() = FakeGpuState{};
  }

  Status rma(proto::Op op, void* buffer, size_t n, uint64_t raddr, const Rkey& rkey,
             uct::MemType mem = uct::MemType::Host) {
    RequestParams params;
    params.mem_type = mem;
    return op == proto::Op::Put ? wait(ep_->put_nbx(buffer, n, raddr, rkey, params))
                                : wait(ep_->get_nbx(buffer, n, raddr, rkey, params));
  }

  uint64_t base() const { return reinterpret_cast<uintptr_t>(vram_->address()); }
  uint8_t* vram() const { return static_cast<uint8_t*>(vram_->address()); }
  uint8_t* local_vram() const { return static_cast<uint8_t*>(local_vram_->address()); }

  std::unique_ptr<uct::MemHandle> vram_, local_vram_;
  std::unique_ptr<MemHandle> vram_mh_;
  std::unique_ptr<Rkey> rkey_;
};

TEST_P(UcpRemoteStaging, RegisteredOnlyWhereTheMemoryTypeIsTaken) {
  EXPECT_EQ(vram_mh_->mem_type(), uct::MemType::Cuda);
  EXPECT_EQ(rkey_->mem_type(), uct::MemType::Cuda);
  EXPECT_FALSE(rkey_->any_lane()) << "a " << GetParam() << " key to GPU memory";
  for (size_t i = 0; i < ctx_->mds().size(); ++i) {
    EXPECT_EQ(vram_mh_->uct_memh(i) != nullptr, ctx_->mds()[i].name == "fake_gpu")
        << ctx_->mds()[i].name;
  }
  std::ostringstream os;
  ep_->print(os);
  EXPECT_NE(os.str().find("put, get: remote staging"), std::string::npos) << os.str();
}

TEST_P(UcpRemoteStaging, HostToPeerVramAndBackEverySize) {
  std::vector<uint8_t> host(kVram);
  for (size_t n : {size_t{8}, size_t{4095}, kFrag + 1, 3 * kFrag + 123, kVram}) {
    SCOPED_TRACE("size " + std::to_string(n));
    fill(host.data(), n, n);
    std::memset(vram(), 0, kVram);
    ASSERT_EQ(rma(proto::Op::Put, host.data(), n, base(), *rkey_), Status::Ok);
    // Complete at the target when the request is: no flush needed.
    EXPECT_TRUE(matches(vram(), n, n));
    if (n < kVram) {
      EXPECT_EQ(vram()[n], 0) << "wrote past";
    }
    fill(vram(), n, n + 1);
    std::memset(host.data(), 0, kVram);
    ASSERT_EQ(rma(proto::Op::Get, host.data(), n, base(), *rkey_), Status::Ok);
    EXPECT_TRUE(matches(host.data(), n, n + 1));
    if (n < kVram) {
      EXPECT_EQ(host[n], 0) << "read past";
    }
  }
  EXPECT_GE(fake_gpu_state().max_queued, 2u) << "the target's pipeline overlapped nothing";
}

TEST_P(UcpRemoteStaging, VramToPeerVramAndBack) {
  // An offset into the registration, several fragments on either side.
  const size_t off = 4096 + 8;
  for (size_t n : {size_t{8}, 5 * kFrag + 77}) {
    SCOPED_TRACE("size " + std::to_string(n));
    fill(local_vram(), n, n + 2);
    std::memset(vram(), 0, kVram);
    ASSERT_EQ(rma(proto::Op::Put, local_vram(), n, base() + off, *rkey_, uct::MemType::Cuda),
              Status::Ok);
    EXPECT_TRUE(matches(vram() + off, n, n + 2));
    EXPECT_EQ(vram()[off - 1], 0);
    EXPECT_EQ(vram()[off + n], 0);
    fill(vram() + off, n, n + 3);
    std::memset(local_vram(), 0, kVram);
    ASSERT_EQ(rma(proto::Op::Get, local_vram(), n, base() + off, *rkey_, uct::MemType::Unknown),
              Status::Ok);
    EXPECT_TRUE(matches(local_vram(), n, n + 3));
    EXPECT_EQ(local_vram()[n], 0);
  }
}

TEST_P(UcpRemoteStaging, TargetRefusesWhatIsNotRegisteredAsRemoteAccessible) {
  mc::test::LogCapture log(google::GLOG_ERROR);
  std::vector<uint8_t> host(kFrag, 0xab);
  // A forged key: the registration's memory type and address, a range past
  // its end (the initiator's own check passes; the target's must not).
  RkeyContainer forged;
  forged.address = base();
  forged.length = 2 * kVram;
  forged.mem_type = static_cast<uint8_t>(uct::MemType::Cuda);
  Result<std::unique_ptr<Rkey>> big = ep_->rkey_unpack(rkey_container_pack(forged));
  ASSERT_TRUE(big.ok());
  std::memset(vram(), 0, kVram);
  EXPECT_EQ(rma(proto::Op::Put, host.data(), kFrag, base() + kVram - 100, **big),
            Status::InvalidParam);
  EXPECT_EQ(rma(proto::Op::Get, host.data(), kFrag, base() + kVram, **big), Status::InvalidParam);
  EXPECT_NE(log.text().find("lies in no remote-accessible registration"), std::string::npos)
      << log.text();
  // Registered for local access only: not reachable either.
  Result<std::unique_ptr<MemHandle>> local_only =
      MemHandle::map(*ctx_, local_vram(), kVram, uct::kAccessLocal);
  ASSERT_TRUE(local_only.ok());
  forged.address = reinterpret_cast<uintptr_t>(local_vram());
  forged.length = kVram;
  big = ep_->rkey_unpack(rkey_container_pack(forged));
  ASSERT_TRUE(big.ok());
  std::memset(local_vram(), 0, kVram);
  EXPECT_EQ(rma(proto::Op::Put, host.data(), 100, forged.address, **big), Status::InvalidParam);
  // Deregistered: its key no longer reaches it.
  vram_mh_.reset();
  EXPECT_EQ(rma(proto::Op::Put, host.data(), 100, base(), *rkey_), Status::InvalidParam);
  for (size_t i = 0; i < kVram; ++i) {
    ASSERT_EQ(vram()[i], 0) << "written at " << i;
    ASSERT_EQ(local_vram()[i], 0) << "written at " << i;
  }
}

// Forged requests sent as raw UCT active messages: one that does not decode
// is dropped with why; one that decodes but carries a bad key for the
// initiator's buffer is refused with why. Nothing is written either way.
TEST_P(UcpRemoteStaging, ForgedRequestsAreLoggedAndWriteNothing) {
  mc::test::LogCapture log(google::GLOG_ERROR);
  ASSERT_GE(ucp::impl(*ep_).lanes().am_lane, 0);
  uct::Endpoint* uct_ep =
      ucp::impl(*ep_).lane_runtime()[static_cast<size_t>(ucp::impl(*ep_).lanes().am_lane)].ep;
  auto send = [uct_ep](std::vector<uint8_t> bytes) {
    const uct::PackCallback pack = [](void* dest, void* arg) -> size_t {
      const auto* v = static_cast<const std::vector<uint8_t>*>(arg);
      std::memcpy(dest, v->data(), v->size());
      return v->size();
    };
    return uct_ep->am_bcopy(proto::kAmIdStagingRequest, pack, &bytes).ok();
  };
  std::memset(vram(), 0, kVram);
  RemoteStagingRequest q;
  q.op = proto::Op::Put;
  q.sender_uuid = workers_[0]->uuid();
  q.request_id = 1000;
  q.remote_addr = base();
  q.length = 100;
  q.host_addr = 0x1000;
  q.address = workers_[0]->address();
  q.rkey = {1, 2, 3};
  std::vector<uint8_t> bad_version = remote_staging_request_pack(q);
  bad_version[0] = 9;
  ASSERT_TRUE(send(bad_version));
  ASSERT_TRUE(send(remote_staging_request_pack(q)));
  EXPECT_TRUE(
      spin_until([&] { return log.text().find("packed rkey of 3 bytes") != std::string::npos; },
                 [&] {
                   for (auto& w : workers_) w->progress();
                 },
                 std::chrono::seconds(10)))
      << log.text();
  EXPECT_NE(log.text().find("dropped a remote staging request: remote staging request version 9"),
            std::string::npos)
      << log.text();
  for (size_t i = 0; i < kVram; ++i) ASSERT_EQ(vram()[i], 0) << "written at " << i;
}

TEST_P(UcpRemoteStaging, CanceledThenTheNextOneWorks) {
  std::vector<uint8_t> host(8 * kFrag);
  fill(host.data(), host.size(), 4);
  Result<std::shared_ptr<Request>> r =
      ep_->put_nbx(host.data(), host.size(), base(), *rkey_, RequestParams{});
  ASSERT_TRUE(r.ok());
  (*r)->cancel();
  EXPECT_EQ(wait(*r), Status::Canceled);
  // The target still serves it (the buffer stays registered meanwhile);
  // the worker is sound afterwards.
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
  spin_until([&] { return std::chrono::steady_clock::now() > until; },
             [&] {
               for (auto& w : workers_) w->progress();
             });
  // The worker is sound afterwards.
  fill(host.data(), 1000, 5);
  ASSERT_EQ(rma(proto::Op::Put, host.data(), 1000, base(), *rkey_), Status::Ok);
  EXPECT_TRUE(matches(vram(), 1000, 5));
}

TEST_P(UcpRemoteStaging, CloseForceCancelsAndCloseFlushWaits) {
  std::vector<uint8_t> host(kVram);
  fill(host.data(), host.size(), 6);
  Result<std::shared_ptr<Request>> r = ep_->put_nbx(host.data(), host.size(), base(), *rkey_);
  ASSERT_TRUE(r.ok());
  Result<std::shared_ptr<Request>> c = ep_->close(CloseMode::Force);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(wait(*r), Status::Canceled);
  EXPECT_EQ(wait(*c), Status::Ok);
  EXPECT_EQ(ep_->put_nbx(host.data(), 8, base(), *rkey_).status(), Status::Canceled);
  // A new endpoint: a flushing close completes once the target answered.
  rkey_.reset();
  Result<std::unique_ptr<Endpoint>> ep = workers_[0]->ep_create(workers_[1]->address());
  ASSERT_TRUE(ep.ok());
  ep_ = std::move(*ep);
  Result<std::vector<uint8_t>> packed = vram_mh_->rkey_pack();
  ASSERT_TRUE(packed.ok());
  Result<std::unique_ptr<Rkey>> rk = ep_->rkey_unpack(*packed);
  ASSERT_TRUE(rk.ok());
  rkey_ = std::move(*rk);
  std::memset(vram(), 0, kVram);
  r = ep_->put_nbx(host.data(), host.size(), base(), *rkey_);
  ASSERT_TRUE(r.ok());
  c = ep_->close(CloseMode::Flush);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(wait(*c), Status::Ok);
  EXPECT_TRUE((*r)->completed());
  EXPECT_EQ((*r)->status(), Status::Ok);
  EXPECT_TRUE(matches(vram(), kVram, 6));
}

INSTANTIATE_TEST_SUITE_P(Tl, UcpRemoteStaging, testing::Values("tcp", "sm"));

TEST(UcpRemoteStagingWire, RequestAndCompletionDecodersCheckEveryField) {
  RemoteStagingRequest q;
  q.op = proto::Op::Get;
  q.sender_uuid = 7;
  q.request_id = 9;
  q.remote_addr = 0x10000;
  q.length = 4096;
  q.host_addr = 0x20000;
  q.address = {1, 2, 3};
  q.rkey = {4, 5};
  const std::vector<uint8_t> bytes = remote_staging_request_pack(q);
  ASSERT_EQ(bytes.size(), proto::kAmRemoteStagingHeader + 5);
  std::string why;
  Result<RemoteStagingRequest> d = remote_staging_request_unpack(bytes, &why);
  ASSERT_TRUE(d.ok()) << why;
  EXPECT_EQ(d->op, proto::Op::Get);
  EXPECT_EQ(d->remote_addr, q.remote_addr);
  EXPECT_EQ(d->host_addr, q.host_addr);
  EXPECT_EQ(d->length, q.length);
  EXPECT_EQ(d->address, q.address);
  EXPECT_EQ(d->rkey, q.rkey);
  for (size_t n = 0; n < bytes.size(); ++n) {
    EXPECT_EQ(remote_staging_request_unpack({bytes.data(), n}, &why).status(), Status::InvalidParam)
        << n;
  }
  auto bad = [&](size_t at, uint8_t v, const char* what) {
    std::vector<uint8_t> b = bytes;
    b[at] = v;
    EXPECT_EQ(remote_staging_request_unpack(b, &why).status(), Status::InvalidParam) << what;
    EXPECT_NE(why.find(what), std::string::npos) << why;
  };
  bad(0, kRemoteStagingVersion + 1, "version");
  bad(1, 2, "unknown op");
  bad(3, 1, "reserved");
  bad(33, 0, "empty or wrapping");  // length 4096 -> 0 (bytes 32..39)
  std::vector<uint8_t> wrap = bytes;
  for (int i = 0; i < 8; ++i) wrap[32 + i] = 0xff;  // length 2^64 - 1
  EXPECT_EQ(remote_staging_request_unpack(wrap, &why).status(), Status::InvalidParam);
  std::vector<uint8_t> longer = bytes;
  longer.push_back(0);
  EXPECT_EQ(remote_staging_request_unpack(longer, &why).status(), Status::InvalidParam);

  const std::vector<uint8_t> done = remote_staging_done_pack(9, Status::IoError);
  Result<std::pair<uint64_t, Status>> dd = remote_staging_done_unpack(done, &why);
  ASSERT_TRUE(dd.ok()) << why;
  EXPECT_EQ(dd->first, 9u);
  EXPECT_EQ(dd->second, Status::IoError);
  EXPECT_FALSE(remote_staging_done_unpack({done.data(), done.size() - 1}, &why).ok());
  std::vector<uint8_t> v2 = done;
  v2[0] = 2;
  EXPECT_FALSE(remote_staging_done_unpack(v2, &why).ok());
  EXPECT_NE(why.find("version"), std::string::npos) << why;
  std::vector<uint8_t> busy = remote_staging_done_pack(9, Status::InProgress);
  EXPECT_FALSE(remote_staging_done_unpack(busy, &why).ok());
}

TEST(UcpRemoteStagingWire, PackedRkeyCarriesTheMemoryType) {
  RkeyContainer c;
  c.address = 0x1000;
  c.length = 64;
  c.mem_type = static_cast<uint8_t>(uct::MemType::Cuda);
  std::string why;
  // GPU memory no md packs a key for: no entry, still a key.
  Result<RkeyContainer> d = rkey_container_unpack(rkey_container_pack(c), &why);
  ASSERT_TRUE(d.ok()) << why;
  EXPECT_EQ(d->mem_type, c.mem_type);
  c.mem_type = 0;
  EXPECT_FALSE(rkey_container_unpack(rkey_container_pack(c), &why).ok()) << "host, no entry";
  c.entries = {{"tcp", {1}}};
  std::vector<uint8_t> p = rkey_container_pack(c);
  p[7] = 9;
  EXPECT_FALSE(rkey_container_unpack(p, &why).ok());
  EXPECT_NE(why.find("memory type 9"), std::string::npos) << why;
  p[7] = 0;
  p[4] = 1;  // version 1: no memory type
  EXPECT_FALSE(rkey_container_unpack(p, &why).ok());
  EXPECT_NE(why.find("version 1"), std::string::npos) << why;
}

// Across two processes: a forked child registers its fake GPU memory and
// serves it; the parent reaches it from host memory.
int child_main(const std::string& tl, int cmd_fd, int reply_fd) {
  ucs::config::Sources sources;
  std::unique_ptr<Context> ctx = make_context(env_of(tl, "20s"), &sources, {fake_gpu_component()});
  if (!ctx) return 2;
  Result<std::unique_ptr<Worker>> w = Worker::create(*ctx);
  if (!w.ok()) return 3;
  std::unique_ptr<uct::MemHandle> vram = fake_vram(*ctx, kVram);
  if (!vram) return 4;
  Result<std::unique_ptr<MemHandle>> mh = MemHandle::map(*ctx, vram->address(), kVram);
  if (!mh.ok()) return 4;
  Result<std::vector<uint8_t>> rkey = (*mh)->rkey_pack();
  if (!rkey.ok()) return 5;
  const uint64_t base = reinterpret_cast<uintptr_t>(vram->address());
  if (!mc::test::write_blob(reply_fd, (*w)->address()) || !mc::test::write_blob(reply_fd, *rkey) ||
      !mc::test::write_all(reply_fd, &base, 8)) {
    return 6;
  }
  auto* p = static_cast<uint8_t*>(vram->address());
  for (;;) {
    (*w)->progress();
    if (!mc::test::readable(cmd_fd)) continue;
    uint64_t c[3];  // op ('C' check, 'F' fill, 'S' stop serving, 'Q' quit), length, seed
    if (!mc::test::read_all(cmd_fd, c, sizeof(c))) return 7;
    if (c[0] == 'Q') return 0;
    if (c[1] > kVram) return 8;
    char ok = 'Y';
    if (c[0] == 'C') ok = matches(p, c[1], c[2]) ? 'Y' : 'N';
    if (c[0] == 'F') fill(p, c[1], c[2]);
    if (!mc::test::write_all(reply_fd, &ok, 1)) return 9;
    if (c[0] == 'S') pause();  // until killed
  }
}

class UcpRemoteStagingTwoProc : public testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (!uct::find_component(GetParam())) GTEST_SKIP() << GetParam() << " is not available";
    int cmd[2], reply[2];
    ASSERT_EQ(pipe(cmd), 0);
    ASSERT_EQ(pipe(reply), 0);
    pid_ = fork();
    ASSERT_GE(pid_, 0);
    if (pid_ == 0) {
      close(cmd[1]);
      close(reply[0]);
      _exit(child_main(GetParam(), cmd[0], reply[1]));
    }
    close(cmd[0]);
    close(reply[1]);
    cmd_fd_ = cmd[1];
    reply_fd_ = reply[0];
    // A short deadline: the killed peer's case ends by it at the latest.
    ctx_ = make_context(env_of(GetParam(), "3s"), &sources_, {fake_gpu_component()});
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
  }

  void TearDown() override {
    if (pid_ > 0 && paused_ && !killed_) {
      (void)kill(pid_, SIGKILL);
      killed_ = true;
    }
    if (pid_ > 0 && !killed_) {
      const uint64_t q[3] = {'Q', 0, 0};
      (void)mc::test::write_all(cmd_fd_, q, sizeof(q));
    }
    rkey_.reset();
    ep_.reset();
    worker_.reset();
    ctx_.reset();
    if (pid_ > 0) {
      int st = 0;
      EXPECT_EQ(waitpid(pid_, &st, 0), pid_);
      if (!killed_) {
        EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "child status " << st;
      }
    }
    if (cmd_fd_ >= 0) close(cmd_fd_);
    if (reply_fd_ >= 0) close(reply_fd_);
  }

  bool ask(char op, uint64_t len, uint64_t seed) {
    const uint64_t c[3] = {static_cast<uint64_t>(op), len, seed};
    if (!mc::test::write_all(cmd_fd_, c, sizeof(c))) return false;
    if (!spin_until([&] { return mc::test::readable(reply_fd_); }, [&] { worker_->progress(); },
                    std::chrono::seconds(10))) {
      return false;
    }
    char ok = 0;
    return mc::test::read_all(reply_fd_, &ok, 1) && ok == 'Y';
  }

  Status wait(Result<std::shared_ptr<Request>> r) {
    if (!r.ok()) return r.status();
    if (!spin_until([&] { return (*r)->completed(); }, [&] { worker_->progress(); },
                    std::chrono::seconds(15))) {
      return Status::InProgress;  // a hang: the test fails on it
    }
    return (*r)->status();
  }

  pid_t pid_ = -1;
  bool paused_ = false;  ///< told to stop serving: only a kill ends it
  bool killed_ = false;
  int cmd_fd_ = -1;
  int reply_fd_ = -1;
  uint64_t base_ = 0;
  ucs::config::Sources sources_;
  std::unique_ptr<Context> ctx_;
  std::unique_ptr<Worker> worker_;
  std::unique_ptr<Endpoint> ep_;
  std::unique_ptr<Rkey> rkey_;
};

TEST_P(UcpRemoteStagingTwoProc, HostToPeerVramAndBack) {
  std::vector<uint8_t> host(kVram);
  for (size_t n : {size_t{8}, 3 * kFrag + 5, kVram}) {
    SCOPED_TRACE("size " + std::to_string(n));
    fill(host.data(), n, n + 7);
    ASSERT_EQ(wait(ep_->put_nbx(host.data(), n, base_, *rkey_)), Status::Ok);
    EXPECT_TRUE(ask('C', n, n + 7));
    ASSERT_TRUE(ask('F', n, n + 8));
    std::memset(host.data(), 0, kVram);
    ASSERT_EQ(wait(ep_->get_nbx(host.data(), n, base_, *rkey_)), Status::Ok);
    EXPECT_TRUE(matches(host.data(), n, n + 8));
  }
}

TEST_P(UcpRemoteStagingTwoProc, PeerKilledMidOperationFailsTheRequest) {
  paused_ = true;               // even when the answer does not come: TearDown kills it
  ASSERT_TRUE(ask('S', 0, 0));  // the child stops serving
  std::vector<uint8_t> host(kVram, 1);
  // Alive but silent: the request's deadline ends it.
  RequestParams params;
  params.timeout = std::chrono::milliseconds(200);
  EXPECT_EQ(wait(ep_->get_nbx(host.data(), 1000, base_, *rkey_, params)), Status::Timeout);
  Result<std::shared_ptr<Request>> r = ep_->put_nbx(host.data(), host.size(), base_, *rkey_);
  ASSERT_TRUE(r.ok());
  for (int i = 0; i < 100; ++i) worker_->progress();
  EXPECT_FALSE((*r)->completed());
  ASSERT_EQ(kill(pid_, SIGKILL), 0);
  killed_ = true;
  const auto t0 = std::chrono::steady_clock::now();
  const Status s = wait(*r);
  EXPECT_TRUE(is_error(s)) << ucs::status_string(s);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
}

INSTANTIATE_TEST_SUITE_P(Tl, UcpRemoteStagingTwoProc, testing::Values("tcp", "sm"));

}  // namespace
}  // namespace mc::ucp::test::remote_staging
