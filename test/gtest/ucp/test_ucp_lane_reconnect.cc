// SPDX-License-Identifier: Apache-2.0
// Lanes that fail and come back, between two processes over two tcp lanes
// (loopback and a second network device): an endpoint comes up when one
// lane cannot connect (the AM lane included) and works over the other; a
// cut lane is connected again in the background (MC_LANE_RECONNECT_INTERVAL)
// and the same endpoint carries bytes on it again; "off" keeps it down.
// Data is checked by reading it back.
#include <arpa/inet.h>
#include <dirent.h>
#include <gtest/gtest.h>
#include <ifaddrs.h>
#include <linux/tcp.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <sstream>
#include <utility>

#include "common/log_capture.h"
#include "common/net_util.h"
#include "common/pipe_util.h"
#include "ucp/api/ucp.h"
#include "ucp/core/endpoint.h"
#include "ucp/core/worker.h"
#include "ucp/ucp_test_util.h"
#include "ucs/log/log.h"
#include "ucs/sys/sys.h"
#include "uct/base/component_loader.h"

namespace mc::ucp::test {
namespace {

using ucs::Result;
using ucs::Status;

constexpr size_t kBuffer = size_t{32} << 20;
constexpr uint16_t kAmId = 9;

// Bytes this process's sockets on `addr` sent and the peer acknowledged.
uint64_t bytes_sent_on(in_addr addr) {
  uint64_t total = 0;
  mc::test::for_sockets_on(addr, [&total](int fd) {
    tcp_info info{};
    socklen_t len = sizeof(info);
    if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) == 0) total += info.tcpi_bytes_acked;
  });
  return total;
}

// The target process: serves a buffer and reports the length of every
// active message it gets, until the parent closes its pipe.
int child_main(const std::map<std::string, std::string>& env, int cmd_fd, int reply_fd) {
  TargetSide t;
  if (const int rc = t.open(env, kBuffer); rc != 0) return rc;
  t.worker->set_am_handler(kAmId, [reply_fd](const void*, size_t length) {
    const uint64_t n = length;
    (void)mc::test::write_all(reply_fd, &n, sizeof(n));
  });
  if (const int rc = t.publish(reply_fd); rc != 0) return rc;
  for (;;) {
    t.worker->progress();
    pollfd p{cmd_fd, POLLIN, 0};
    if (poll(&p, 1, 0) > 0) break;  // the parent closed the pipe (or went)
  }
  return 0;
}

class UcpLaneReconnect : public testing::Test {
 protected:
  void SetUp() override {
    if (!uct::find_component("tcp")) GTEST_SKIP() << "tcp transport is not available";
    if (!mc::test::second_device(&dev_, &dev_addr_))
      GTEST_SKIP() << "no second network device is up";
    env_ = {{"MC_TLS", "tcp"},
            {"MC_NET_DEVICES", "lo," + dev_},
            {"MC_MAX_RMA_RAILS", "2"},
            {"MC_LOOPBACK_RAILS", "2"},  // both rails, though the peer is in this namespace
            {"MC_TRANSFER_TIMEOUT", "60s"}};
  }

  // Starts the target and this side's worker; `interval`: the initiator's
  // MC_LANE_RECONNECT_INTERVAL.
  void start(const std::string& interval) {
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
    std::map<std::string, std::string> env = env_;
    env["MC_LANE_RECONNECT_INTERVAL"] = interval;
    ctx_ = make_context(env, &sources_);
    ASSERT_TRUE(ctx_);
    Result<std::unique_ptr<Worker>> w = Worker::create(*ctx_);
    ASSERT_TRUE(w.ok());
    worker_ = std::move(*w);
    ASSERT_TRUE(mc::test::read_blob(reply_fd_, &address_)) << "the target did not start";
    ASSERT_TRUE(mc::test::read_blob(reply_fd_, &rkey_bytes_));
    ASSERT_TRUE(mc::test::read_all(reply_fd_, &base_, sizeof(base_)));
  }

  // Connects to `address`, unpacks the target's rkey.
  void connect(const std::vector<uint8_t>& address) {
    Result<std::unique_ptr<Endpoint>> ep = worker_->ep_create(address);
    ASSERT_TRUE(ep.ok()) << ucs::status_string(ep.status());
    ep_ = std::move(*ep);
    ASSERT_EQ(ucp::impl(*ep_).lanes().rma_bw_lanes.size(), 2u) << "two tcp rails expected";
    Result<std::unique_ptr<Rkey>> rk = ep_->rkey_unpack(rkey_bytes_);
    ASSERT_TRUE(rk.ok());
    rkey_ = std::move(*rk);
  }

  // The target's address with the IPv4 address of its entry for device
  // `dev` replaced by `ipv4` (dotted).
  std::vector<uint8_t> address_with(const std::string& dev, const char* ipv4) {
    std::string why;
    Result<wireup::WorkerAddress> a = wireup::address_unpack(address_, &why);
    EXPECT_TRUE(a.ok()) << why;
    if (!a.ok()) return {};
    in_addr ip{};
    inet_pton(AF_INET, ipv4, &ip);
    for (wireup::AddressEntry& e : a->ifaces) {
      // Device address: u8 family, then the IPv4 address in network order.
      if (e.dev_name == dev && e.device_addr.size() >= 5) std::memcpy(&e.device_addr[1], &ip, 4);
    }
    return wireup::address_pack(*a);
  }

  // The endpoint's lane on device `dev`.
  size_t lane_of(const std::string& dev) const {
    for (size_t l = 0; l < ucp::impl(*ep_).lanes().lanes.size(); ++l) {
      if (ucp::impl(*ep_).lanes().candidate_of(l).name.starts_with("tcp/" + dev + " ")) return l;
    }
    return SIZE_MAX;
  }

  std::string printed() const {
    std::ostringstream os;
    ep_->print(os);
    return os.str();
  }

  // Progresses until `done` or `seconds` pass.
  template <typename Pred>
  bool progress_until(Pred done, double seconds) {
    const uint64_t end = ucs::monotonic_ns() + static_cast<uint64_t>(seconds * 1e9);
    while (!done()) {
      if (ucs::monotonic_ns() > end) return false;
      worker_->progress();
      usleep(100);
    }
    return true;
  }

  // Puts `n` bytes of pattern `seed` into the target, gets them back into
  // another buffer; true when both completed and every byte came back.
  bool round_trip(size_t n, uint8_t seed) {
    std::vector<uint8_t> src(n), back(n, 0);
    for (size_t i = 0; i < n; ++i) src[i] = static_cast<uint8_t>((i * 7 + (i >> 12)) ^ seed);
    auto smh = MemHandle::map(*ctx_, src.data(), n);
    auto bmh = MemHandle::map(*ctx_, back.data(), n);
    if (!smh.ok() || !bmh.ok()) return false;
    RequestParams rp;
    rp.memh = smh->get();
    auto put = ep_->put_nbx(src.data(), n, base_, *rkey_, rp);
    if (!put.ok() || (*put)->wait() != Status::Ok) return false;
    auto flush = ep_->flush();
    if (!flush.ok() || (*flush)->wait() != Status::Ok) return false;
    rp.memh = bmh->get();
    auto get = ep_->get_nbx(back.data(), n, base_, *rkey_, rp);
    if (!get.ok() || (*get)->wait() != Status::Ok) return false;
    return back == src;
  }

  void TearDown() override {
    rkey_.reset();
    ep_.reset();
    worker_.reset();
    ctx_.reset();
    if (cmd_fd_ >= 0) close(cmd_fd_);
    if (reply_fd_ >= 0) close(reply_fd_);
    if (pid_ > 0) {
      int status = 0;
      waitpid(pid_, &status, 0);
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "target status " << status;
    }
  }

  std::string dev_;
  in_addr dev_addr_{};
  std::map<std::string, std::string> env_;
  pid_t pid_ = -1;
  int cmd_fd_ = -1, reply_fd_ = -1;
  ucs::config::Sources sources_;
  std::unique_ptr<Context> ctx_;
  std::unique_ptr<Worker> worker_;
  std::vector<uint8_t> address_, rkey_bytes_;
  uint64_t base_ = 0;
  std::unique_ptr<Endpoint> ep_;
  std::unique_ptr<Rkey> rkey_;
};

// The target's second device named by a broadcast address: the lane's
// connect fails at once (ENETUNREACH) while the endpoint is created.
TEST_F(UcpLaneReconnect, EndpointComesUpWithoutALaneThatCannotConnect) {
  start("50ms");
  mc::test::LogCapture sink;
  connect(address_with(dev_, "255.255.255.255"));
  ASSERT_TRUE(ep_);
  const size_t cut = lane_of(dev_), lo = lane_of("lo");
  ASSERT_NE(cut, SIZE_MAX);
  ASSERT_NE(lo, SIZE_MAX);
  EXPECT_TRUE(is_error(ucp::impl(*ep_).lane_runtime()[cut].status));
  EXPECT_EQ(ucp::impl(*ep_).lane_runtime()[lo].status, Status::Ok);
  EXPECT_NE(sink.text().find("could not connect"), std::string::npos) << sink.text();
  EXPECT_NE(printed().find("is down: could not connect"), std::string::npos) << printed();
  EXPECT_TRUE(round_trip(kBuffer, 1)) << "a multi-rail put and get over the lane left";
  // The reconnections keep failing, and say so.
  EXPECT_TRUE(progress_until(
      [&] {
        return printed().find("failed so far") != std::string::npos &&
               printed().find("(0 failed") == std::string::npos;
      },
      5))
      << printed();
  EXPECT_TRUE(is_error(ucp::impl(*ep_).lane_runtime()[cut].status));
  EXPECT_TRUE(round_trip(1 << 20, 2));
}

// The AM lane (loopback) cannot connect: active messages go over the other.
TEST_F(UcpLaneReconnect, ActiveMessagesWithoutTheAmLane) {
  start("1s");
  connect(address_with("lo", "127.255.255.255"));
  ASSERT_TRUE(ep_);
  ASSERT_GE(ucp::impl(*ep_).lanes().am_lane, 0);
  const auto am = static_cast<size_t>(ucp::impl(*ep_).lanes().am_lane);
  EXPECT_TRUE(is_error(ucp::impl(*ep_).lane_runtime()[am].status)) << printed();
  for (size_t n : {size_t{8}, size_t{100000}, size_t{3} << 20}) {
    std::vector<uint8_t> msg(n, 0x5a);
    auto r = ep_->am_send_nbx(kAmId, msg.data(), n);
    ASSERT_TRUE(r.ok()) << n;
    EXPECT_EQ((*r)->wait(), Status::Ok) << n;
    uint64_t got = 0;
    pollfd p{reply_fd_, POLLIN, 0};
    ASSERT_TRUE(progress_until([&] { return poll(&p, 1, 0) > 0; }, 20)) << "no message of " << n;
    ASSERT_TRUE(mc::test::read_all(reply_fd_, &got, sizeof(got)));
    EXPECT_EQ(got, n);
  }
  EXPECT_TRUE(round_trip(4 << 20, 3));
}

// A lane cut under a live endpoint is connected again, and the same
// endpoint puts bytes on it again.
TEST_F(UcpLaneReconnect, CutLaneCarriesBytesAgain) {
  start("100ms");
  connect(address_);
  ASSERT_TRUE(ep_);
  const size_t lane = lane_of(dev_);
  ASSERT_NE(lane, SIZE_MAX);
  EXPECT_TRUE(round_trip(kBuffer, 4));
  mc::test::LogCapture sink;
  EXPECT_GT(mc::test::cut_sockets_on(dev_addr_), 0) << "no socket on " << dev_ << " to cut";
  EXPECT_TRUE(
      progress_until([&] { return is_error(ucp::impl(*ep_).lane_runtime()[lane].status); }, 10))
      << "the cut lane did not fail";
  EXPECT_TRUE(
      progress_until([&] { return ucp::impl(*ep_).lane_runtime()[lane].status == Status::Ok; }, 10))
      << "the lane was not reconnected: " << printed();
  EXPECT_NE(sink.text().find("reconnected"), std::string::npos) << sink.text();
  const uint64_t before = bytes_sent_on(dev_addr_);
  EXPECT_TRUE(round_trip(kBuffer, 5)) << "after the reconnection";
  const uint64_t carried = bytes_sent_on(dev_addr_) - before;
  EXPECT_GT(carried, kBuffer / 8) << "the reconnected lane carried " << carried << " bytes";
  EXPECT_EQ(printed().find("is down"), std::string::npos) << printed();
}

// A put that completed locally (short / bcopy: the transport took the
// bytes) on a lane that is then cut may never have arrived; the lane comes
// back (reconnected, nothing outstanding on its new connection), yet the
// next flush must fail rather than vouch for the put, the endpoint's and the
// worker's alike. Once each: the flush after it succeeds, and the endpoint
// moves data.
TEST_F(UcpLaneReconnect, LocallyCompletedPutOnACutLaneFailsTheFlushAfterReconnection) {
  start("100ms");
  connect(address_);
  ASSERT_TRUE(ep_);
  const size_t lane = ucp::impl(*ep_).lanes().rma_lanes.at(0);
  const bool on_lo =
      ucp::impl(*worker_).local_resources()[ucp::impl(*ep_).lanes().lanes[lane].local].dev_name ==
      "lo";
  in_addr addr = dev_addr_;
  if (on_lo) inet_pton(AF_INET, "127.0.0.1", &addr);
  ASSERT_EQ(kill(pid_, SIGSTOP), 0);  // no acknowledgement from here on
  std::vector<uint8_t> src(100, 0x5a);
  auto put = ep_->put_nbx(src.data(), src.size(), base_, *rkey_);
  ASSERT_TRUE(put.ok());
  ASSERT_EQ((*put)->wait(), Status::Ok);
  ASSERT_TRUE(ucp::impl(*ep_).lane_runtime()[lane].local_completions)
      << "the put did not complete locally";
  EXPECT_GT(mc::test::cut_sockets_on(addr), 0);
  EXPECT_TRUE(
      progress_until([&] { return is_error(ucp::impl(*ep_).lane_runtime()[lane].status); }, 10))
      << "the cut lane did not fail";
  ASSERT_EQ(kill(pid_, SIGCONT), 0);
  EXPECT_TRUE(
      progress_until([&] { return ucp::impl(*ep_).lane_runtime()[lane].status == Status::Ok; }, 10))
      << "the lane was not reconnected: " << printed();
  // The endpoint's flush, then the worker's, which covers every endpoint:
  // each fails once, then succeeds.
  const std::pair<const char*, std::function<Result<std::shared_ptr<Request>>()>> flushes[] = {
      {"the endpoint flush", [&] { return ep_->flush(); }},
      {"the worker flush", [&] { return worker_->flush(); }}};
  for (const auto& [what, flush] : flushes) {
    auto first = flush();
    ASSERT_TRUE(first.ok()) << what;
    EXPECT_NE((*first)->wait(), Status::Ok) << what << " vouched for a put its lane may have lost";
    auto again = flush();
    ASSERT_TRUE(again.ok()) << what;
    EXPECT_EQ((*again)->wait(), Status::Ok) << what << " reports the loss once";
  }
  EXPECT_TRUE(round_trip(1 << 20, 7));
}

// MC_LANE_RECONNECT_INTERVAL=off: a cut lane stays down.
TEST_F(UcpLaneReconnect, OffKeepsTheLaneDown) {
  start("off");
  EXPECT_EQ(ctx_->config().lane_reconnect_interval, ucs::config::Duration::zero());
  connect(address_);
  ASSERT_TRUE(ep_);
  const size_t lane = lane_of(dev_);
  ASSERT_NE(lane, SIZE_MAX);
  EXPECT_GT(mc::test::cut_sockets_on(dev_addr_), 0);
  EXPECT_TRUE(
      progress_until([&] { return is_error(ucp::impl(*ep_).lane_runtime()[lane].status); }, 10));
  EXPECT_FALSE(
      progress_until([&] { return !is_error(ucp::impl(*ep_).lane_runtime()[lane].status); }, 0.5));
  EXPECT_NE(printed().find("not reconnected"), std::string::npos) << printed();
  EXPECT_TRUE(round_trip(1 << 20, 6));
}

}  // namespace
}  // namespace mc::ucp::test
