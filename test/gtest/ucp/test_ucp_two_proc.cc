// SPDX-License-Identifier: Apache-2.0
// UCP across two processes: a forked child serves a registered buffer and an
// active-message handler; the parent puts, gets and sends at every size class
// of its protocol tables with the data checked on both sides; a SIGKILLed
// child gives an error or Timeout, never a hang. Addresses, rkeys and the
// child's verdicts travel over pipes.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "common/pipe_util.h"
#include "ucp/api/ucp.h"
#include "ucp/core/endpoint.h"
#include "ucp/core/worker.h"
#include "ucp/ucp_test_util.h"
#include "uct/base/component_loader.h"
#include "uct/uct_test.h"

namespace mc::ucp::test {
namespace {

using ucs::Result;
using ucs::Status;

constexpr size_t kMax = size_t{8} << 20;
constexpr uint16_t kAmId = 7;

// Commands of the parent: 'C' len seed (is the buffer's head that pattern?),
// 'A' (how many good and bad active messages so far?), 'Q' (quit).
struct Command {
  char op = 0;
  uint64_t len = 0;
  uint64_t seed = 0;
};

// The child: serves until 'Q' or until the parent goes. Exit code 0 when
// every step worked.
int child_main(const std::map<std::string, std::string>& env, int cmd_fd, int reply_fd) {
  TargetSide t;
  if (const int rc = t.open(env, kMax); rc != 0) return rc;
  std::vector<uint8_t>& buffer = t.buffer;
  std::unique_ptr<Worker>& worker = t.worker;
  uint64_t am_good = 0, am_bad = 0;
  worker->set_am_handler(kAmId, [&](const void* data, size_t length) {
    // The sender's seed is the length + 3 (see the parent).
    (matches(static_cast<const uint8_t*>(data), length, length + 3) ? am_good : am_bad)++;
  });
  if (const int rc = t.publish(reply_fd); rc != 0) return rc;
  for (;;) {
    worker->progress();
    if (!mc::test::readable(cmd_fd)) continue;
    Command c;
    if (!mc::test::read_all(cmd_fd, &c, sizeof(c))) return 7;  // the parent went
    if (c.op == 'Q') break;
    if (c.op == 'C') {
      const char ok = c.len <= kMax && matches(buffer.data(), c.len, c.seed) ? 'Y' : 'N';
      if (!mc::test::write_all(reply_fd, &ok, 1)) return 8;
    } else if (c.op == 'A') {
      const uint64_t counts[2] = {am_good, am_bad};
      if (!mc::test::write_all(reply_fd, counts, sizeof(counts))) return 8;
    }
  }
  return 0;
}

class UcpTwoProc : public testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    const std::string param = GetParam();
    const std::string tls = param.substr(0, param.find('+'));
    for (const std::string& tl : ucs::config::split_list(tls)) {
      if (!uct::find_component(tl)) GTEST_SKIP() << tl << " transport is not available";
    }
    env_ = {{"MC_TLS", tls}, {"MC_NET_DEVICES", "lo"}, {"MC_TRANSFER_TIMEOUT", "30s"}};
    if (tls.starts_with("rc_")) {
      // The soft verbs provider's fabric of this run (or real hardware).
      uct::test::use_soft_verbs_unless_told();
      env_.erase("MC_NET_DEVICES");  // the RDMA devices, not lo
      for (const char* name : {"MC_IB_PROVIDER", "MC_IB_SOFT_FABRIC"}) {
        if (const char* v = std::getenv(name)) env_[name] = v;
      }
    }
    if (param.ends_with("+bcopy")) {
      env_["MC_BCOPY_THRESH"] = "0";
      env_["MC_ZCOPY_THRESH"] = "inf";
    } else if (param.ends_with("+rndv")) {
      env_["MC_RNDV_THRESH"] = "100000";
    }
    int cmd[2], reply[2];
    ASSERT_EQ(pipe(cmd), 0);
    ASSERT_EQ(pipe(reply), 0);
    pid_ = fork();
    ASSERT_GE(pid_, 0) << strerror(errno);
    if (pid_ == 0) {
      close(cmd[1]);
      close(reply[0]);
      _exit(child_main(env_, cmd[0], reply[1]));
    }
    close(cmd[0]);
    close(reply[1]);
    cmd_fd_ = cmd[1];
    reply_fd_ = reply[0];
    ctx_ = make_context(env_, &sources_);
    ASSERT_TRUE(ctx_);
    Result<std::unique_ptr<Worker>> w = Worker::create(*ctx_);
    ASSERT_TRUE(w.ok());
    worker_ = std::move(*w);
    std::vector<uint8_t> address, rkey;
    ASSERT_TRUE(mc::test::read_blob(reply_fd_, &address)) << "the child did not start";
    ASSERT_TRUE(mc::test::read_blob(reply_fd_, &rkey));
    ASSERT_TRUE(mc::test::read_all(reply_fd_, &base_, sizeof(base_)));
    Result<std::unique_ptr<Endpoint>> ep = worker_->ep_create(address);
    ASSERT_TRUE(ep.ok()) << ucs::status_string(ep.status());
    ep_ = std::move(*ep);
    Result<std::unique_ptr<Rkey>> rk = ep_->rkey_unpack(rkey);
    ASSERT_TRUE(rk.ok());
    rkey_ = std::move(*rk);
  }

  void TearDown() override {
    if (pid_ > 0 && !killed_) {
      const Command q{'Q', 0, 0};
      (void)mc::test::write_all(cmd_fd_, &q, sizeof(q));
    }
    rkey_.reset();
    ep_.reset();
    worker_.reset();
    ctx_.reset();
    if (pid_ > 0) {
      int st = 0;
      if (!killed_) {
        EXPECT_EQ(waitpid(pid_, &st, 0), pid_);
        EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "child status " << st;
      }
    }
    if (cmd_fd_ >= 0) close(cmd_fd_);
    if (reply_fd_ >= 0) close(reply_fd_);
  }

  Status wait(Result<std::shared_ptr<Request>> r) {
    if (!r.ok()) return r.status();
    while (!(*r)->completed()) worker_->progress();
    return (*r)->status();
  }

  // Sends a command; reads `n` reply bytes while progressing this worker
  // (a rendezvous or a get may need this side's progress meanwhile).
  bool ask(const Command& c, void* reply, size_t n) {
    if (!mc::test::write_all(cmd_fd_, &c, sizeof(c))) return false;
    while (!mc::test::readable(reply_fd_)) worker_->progress();
    return mc::test::read_all(reply_fd_, reply, n);
  }

  std::vector<size_t> sizes(proto::Op op) const {
    std::vector<size_t> out = {0, 1, 8, 100, 4096, 65536, 65536 * 3 + 1000, size_t{4} << 20};
    for (bool reg : {false, true}) {
      for (const proto::ProtoRange& r : ucp::impl(*ep_).protocols().table(op, reg).ranges()) {
        for (size_t n : {r.min, r.min - 1, r.max}) {
          if (n <= kMax) out.push_back(n);
        }
      }
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
  }

  void kill_child() {
    ASSERT_EQ(kill(pid_, SIGKILL), 0);
    int st = 0;
    ASSERT_EQ(waitpid(pid_, &st, 0), pid_);
    killed_ = true;
  }

  std::map<std::string, std::string> env_;
  ucs::config::Sources sources_;
  pid_t pid_ = -1;
  bool killed_ = false;
  int cmd_fd_ = -1;
  int reply_fd_ = -1;
  std::unique_ptr<Context> ctx_;
  std::unique_ptr<Worker> worker_;
  std::unique_ptr<Endpoint> ep_;
  std::unique_ptr<Rkey> rkey_;
  uint64_t base_ = 0;
};

TEST_P(UcpTwoProc, PutAndGetEverySizeClass) {
  for (size_t n : sizes(proto::Op::Put)) {
    for (bool registered : {false, true}) {
      SCOPED_TRACE("size " + std::to_string(n) + (registered ? " registered" : ""));
      const uint64_t seed = n * 2 + registered;
      std::vector<uint8_t> src = filled(n, seed);
      std::unique_ptr<MemHandle> smh;
      RequestParams params;
      if (registered && n > 0) {
        smh = std::move(*MemHandle::map(*ctx_, src.data(), n));
        params.memh = smh.get();
      }
      ASSERT_EQ(wait(ep_->put_nbx(src.data(), n, base_, *rkey_, params)), Status::Ok);
      ASSERT_EQ(wait(ep_->flush()), Status::Ok);
      char verdict = 0;
      ASSERT_TRUE(ask(Command{'C', n, seed}, &verdict, 1));
      ASSERT_EQ(verdict, 'Y') << "the child's buffer does not hold what was put";
      std::vector<uint8_t> back(n, 0xee);
      std::unique_ptr<MemHandle> bmh;
      if (registered && n > 0) {
        bmh = std::move(*MemHandle::map(*ctx_, back.data(), n));
        params.memh = bmh.get();
      }
      ASSERT_EQ(wait(ep_->get_nbx(back.data(), n, base_, *rkey_, params)), Status::Ok);
      ASSERT_EQ(back, src);
    }
  }
}

TEST_P(UcpTwoProc, ActiveMessagesEverySizeClass) {
  uint64_t sent = 0;
  for (size_t n : sizes(proto::Op::Am)) {
    SCOPED_TRACE("size " + std::to_string(n));
    const std::vector<uint8_t> msg = filled(n, n + 3);
    ASSERT_EQ(wait(ep_->am_send_nbx(kAmId, msg.data(), n)), Status::Ok);
    ++sent;
    uint64_t counts[2] = {0, 0};
    // Eager messages complete at the sender before the child has them.
    while (counts[0] + counts[1] < sent) ASSERT_TRUE(ask(Command{'A', 0, 0}, counts, 16));
    ASSERT_EQ(counts[1], 0u) << "the child received a corrupted message";
    ASSERT_EQ(counts[0], sent);
  }
}

TEST_P(UcpTwoProc, DeadPeerGivesAnErrorNotAHang) {
  const size_t n = size_t{1} << 20;
  std::vector<uint8_t> src = filled(n, 1);
  ASSERT_EQ(wait(ep_->put_nbx(src.data(), n, base_, *rkey_)), Status::Ok);
  ASSERT_EQ(wait(ep_->flush()), Status::Ok);
  kill_child();
  RequestParams params;
  params.timeout = std::chrono::seconds(10);
  // The first failure may surface on the put or on the flush after it; the
  // deadline bounds both, so each wait returns.
  Status put = Status::Ok, flush = Status::Ok, get = Status::Ok;
  // Small puts first: those a transport completes in the call (short,
  // bcopy) must still leave the failure to the flush after them.
  for (int round = 0; round < 3 && put == Status::Ok && flush == Status::Ok; ++round) {
    for (int i = 0; i < 16 && put == Status::Ok; ++i) {
      put = wait(ep_->put_nbx(src.data(), 8, base_, *rkey_, params));
    }
    flush = wait(ep_->flush(params));
  }
  EXPECT_TRUE(put != Status::Ok || flush != Status::Ok)
      << "8-byte put " << ucs::status_string(put) << ", flush " << ucs::status_string(flush);
  put = flush = Status::Ok;
  for (int round = 0; round < 3 && put == Status::Ok && flush == Status::Ok; ++round) {
    put = wait(ep_->put_nbx(src.data(), n, base_, *rkey_, params));
    flush = wait(ep_->flush(params));
  }
  EXPECT_TRUE(put != Status::Ok || flush != Status::Ok)
      << "put " << ucs::status_string(put) << ", flush " << ucs::status_string(flush);
  std::vector<uint8_t> back(n);
  get = wait(ep_->get_nbx(back.data(), n, base_, *rkey_, params));
  EXPECT_NE(get, Status::Ok) << "a get from a dead process succeeded";
}

INSTANTIATE_TEST_SUITE_P(Ucp, UcpTwoProc,
                         testing::Values("tcp", "sm", "tcp+bcopy", "sm,tcp", "tcp+rndv", "sm+rndv",
                                         "rc_verbs", "rc_mlx5"),
                         [](const testing::TestParamInfo<std::string>& info) {
                           std::string n = info.param;
                           std::replace(n.begin(), n.end(), ',', '_');
                           std::replace(n.begin(), n.end(), '+', '_');
                           return n;
                         });

}  // namespace
}  // namespace mc::ucp::test
