// SPDX-License-Identifier: Apache-2.0
// The Transfer Engine knobs of the Mooncake document that mc answers in the
// engine: MC_HANDSHAKE_LISTEN_BACKLOG reaches the RPC listener's listen()
// (read back from the kernel through sock_diag), MC_INTRA_NVLINK and
// MC_FORCE_MNNVL need cuda_ipc (over the fake CUDA driver: one starts, the
// other names the missing fabric handles), MC_WORKERS_PER_CTX is
// accepted and logged, MC_FORCE_TCP makes the engine's paths tcp and
// MC_FORCE_HCA without an RDMA device fails init.
#include <gtest/gtest.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <memory>
#include <optional>

#include "common/log_capture.h"
#include "te/te_test_util.h"
#include "ucs/log/log.h"
#include "uct/base/component_loader.h"

namespace mc::te::test {
namespace {

// The backlog of the TCP socket of `family` listening on port `port`, as
// the kernel keeps it (inet_diag reports sk_max_ack_backlog as the write
// queue of a listening socket); nullopt when there is none.
std::optional<uint32_t> listen_backlog_of(int family, uint16_t port) {
  const int fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
  if (fd < 0) return std::nullopt;
  struct {
    nlmsghdr nlh;
    inet_diag_req_v2 req;
  } msg{};
  msg.nlh.nlmsg_len = sizeof(msg);
  msg.nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  msg.nlh.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  msg.req.sdiag_family = static_cast<uint8_t>(family);
  msg.req.sdiag_protocol = IPPROTO_TCP;
  msg.req.idiag_states = 1u << TCP_LISTEN;
  std::optional<uint32_t> found;
  if (send(fd, &msg, sizeof(msg), 0) == static_cast<ssize_t>(sizeof(msg))) {
    alignas(nlmsghdr) char buf[16384];
    for (bool done = false; !done;) {
      const ssize_t n = recv(fd, buf, sizeof(buf), 0);
      if (n <= 0) break;
      int left = static_cast<int>(n);
      for (auto* h = reinterpret_cast<nlmsghdr*>(buf); NLMSG_OK(h, left); h = NLMSG_NEXT(h, left)) {
        if (h->nlmsg_type == NLMSG_DONE || h->nlmsg_type == NLMSG_ERROR) {
          done = true;
          break;
        }
        const auto* d = static_cast<const inet_diag_msg*>(NLMSG_DATA(h));
        if (ntohs(d->id.idiag_sport) == port) found = d->idiag_wqueue;
      }
    }
  }
  close(fd);
  return found;
}

// The same for the listener on `port` of either family (the engine's
// listens on IPv6's any, taking IPv4 too, where the kernel has IPv6).
std::optional<uint32_t> listen_backlog(uint16_t port) {
  const std::optional<uint32_t> v4 = listen_backlog_of(AF_INET, port);
  return v4 ? v4 : listen_backlog_of(AF_INET6, port);
}

uint16_t port_of(const std::string& ip_port) {
  return static_cast<uint16_t>(std::stoi(ip_port.substr(ip_port.rfind(':') + 1)));
}

TEST(TeKnobs, HandshakeListenBacklogReachesListen) {
  {
    ScopedEnv env(std::map<std::string, std::string>{{"MC_HANDSHAKE_LISTEN_BACKLOG", "7"}});
    TransferEngine engine;
    ASSERT_EQ(engine.init("P2PHANDSHAKE", "127.0.0.1"), 0);
    EXPECT_EQ(listen_backlog(port_of(engine.getLocalIpAndPort())), std::optional<uint32_t>(7));
  }
  {
    TransferEngine engine;  // Mooncake's default, 128 (below any somaxconn of today)
    ASSERT_EQ(engine.init("P2PHANDSHAKE", "127.0.0.1"), 0);
    EXPECT_EQ(listen_backlog(port_of(engine.getLocalIpAndPort())), std::optional<uint32_t>(128));
  }
  mc::test::LogCapture sink(google::GLOG_ERROR);
  ScopedEnv env(std::map<std::string, std::string>{{"MC_HANDSHAKE_LISTEN_BACKLOG", "0"}});
  TransferEngine engine;
  EXPECT_NE(engine.init("P2PHANDSHAKE", "127.0.0.1"), 0);
  EXPECT_NE(sink.text().find("MC_HANDSHAKE_LISTEN_BACKLOG"), std::string::npos) << sink.text();
}

// The NVLink knobs need cuda_ipc: without a CUDA driver each fails init
// naming itself and why cuda_ipc is not usable; both together say they
// cannot be combined. Over the fake driver MC_INTRA_NVLINK starts, and
// MC_FORCE_MNNVL says why there are no fabric handles.
TEST(TeKnobs, NvlinkKnobsNeedCudaIpcAndSayWhyNot) {
  const std::string none = "/nonexistent/libcuda.so.1";
  const std::vector<std::pair<std::map<std::string, std::string>, std::string>> cases = {
      {{{"MC_INTRA_NVLINK", "1"}, {"MC_CUDA_DRIVER", none}},
       "MC_INTRA_NVLINK=y, but the cuda_ipc transport is not usable: "},
      {{{"MC_FORCE_MNNVL", "y"}, {"MC_CUDA_DRIVER", none}},
       "MC_FORCE_MNNVL=y, but the cuda_ipc transport is not usable: "},
      {{{"MC_INTRA_NVLINK", "y"}, {"MC_FORCE_MNNVL", "true"}},
       "MC_INTRA_NVLINK and MC_FORCE_MNNVL cannot be combined"}};
  for (const auto& [vars, why] : cases) {
    mc::test::LogCapture sink(google::GLOG_ERROR);
    ScopedEnv env(vars);
    TransferEngine engine;
    EXPECT_NE(engine.init("P2PHANDSHAKE", "127.0.0.1"), 0) << why;
    EXPECT_NE(sink.text().find(why), std::string::npos) << sink.text();
  }
  {
    ScopedEnv off({{"MC_INTRA_NVLINK", "n"}, {"MC_FORCE_MNNVL", "0"}});
    TransferEngine engine;
    EXPECT_EQ(engine.init("P2PHANDSHAKE", "127.0.0.1"), 0);
  }
  if (!uct::find_component("cuda_ipc")) GTEST_SKIP() << "no cuda_ipc module (--without-cuda)";
  const std::string fake = MC_TEST_MODULE_DIR "/libmc_test_fakecuda.so";
  {
    ScopedEnv on({{"MC_INTRA_NVLINK", "y"}, {"MC_CUDA_DRIVER", fake}});
    TransferEngine engine;
    EXPECT_EQ(engine.init("P2PHANDSHAKE", "127.0.0.1"), 0) << "cuda_ipc over the fake driver";
  }
  mc::test::LogCapture sink(google::GLOG_ERROR);
  ScopedEnv mnnvl({{"MC_FORCE_MNNVL", "y"}, {"MC_CUDA_DRIVER", fake}});
  TransferEngine engine;
  EXPECT_NE(engine.init("P2PHANDSHAKE", "127.0.0.1"), 0);
  EXPECT_NE(sink.text().find("MC_FORCE_MNNVL=y, but fabric handles are unavailable: GPU 0 does not "
                             "support fabric handles"),
            std::string::npos)
      << sink.text();
}

// Accepted (not warned about as unknown) and logged as having no effect.
TEST(TeKnobs, WorkersPerCtxIsAcceptedAndSaysWhatMcDoes) {
  mc::test::LogCapture sink(google::GLOG_INFO);
  const ucs::LogLevel level = ucs::log_level();
  ucs::log_set_level(ucs::LogLevel::Info);
  {
    ScopedEnv env(std::map<std::string, std::string>{{"MC_WORKERS_PER_CTX", "4"}});
    TransferEngine engine;
    EXPECT_EQ(engine.init("P2PHANDSHAKE", "127.0.0.1"), 0);
  }
  ucs::log_set_level(level);
  const std::string log = sink.text();
  EXPECT_NE(log.find("MC_WORKERS_PER_CTX=4 has no effect: mc runs no worker threads per device"),
            std::string::npos)
      << log;
  EXPECT_EQ(log.find("unknown configuration variable MC_WORKERS_PER_CTX"), std::string::npos)
      << log;
  ScopedEnv bad(std::map<std::string, std::string>{{"MC_WORKERS_PER_CTX", "0"}});
  TransferEngine engine;
  EXPECT_NE(engine.init("P2PHANDSHAKE", "127.0.0.1"), 0);
}

// MC_FORCE_TCP on both sides: the engine's paths are tcp though MC_TLS asks
// for shared memory only.
TEST(TeKnobs, ForceTcpMakesThePathsTcp) {
  if (!uct::find_component("tcp")) GTEST_SKIP() << "tcp transport is not available";
  const std::map<std::string, std::string> vars = {{"MC_FORCE_TCP", "y"}, {"MC_TLS", "sm"}};
  constexpr size_t kSize = 1 << 20;
  TargetProcess target;
  ASSERT_TRUE(target.start("P2PHANDSHAKE", "127.0.0.1", kSize, 5, vars));
  std::unique_ptr<TransferEngine> engine;
  {
    ScopedEnv env(vars);
    engine = std::make_unique<TransferEngine>();
    ASSERT_EQ(engine->init("P2PHANDSHAKE", "127.0.0.1"), 0);
  }
  std::vector<uint8_t> local(kSize, 0);
  ASSERT_EQ(engine->registerLocalMemory(local.data(), kSize, "cpu:0"), 0);
  const SegmentHandle seg = engine->openSegment(target.segment());
  ASSERT_GE(seg, 0);
  std::vector<TransferRequest> reqs = {
      {TransferRequest::READ, local.data(), seg, target.addr(), kSize}};
  for (const TransferStatus& st : run_batch(*engine, reqs)) EXPECT_EQ(st.s, COMPLETED);
  for (size_t i = 0; i < kSize; i += 4099) ASSERT_EQ(local[i], pattern(5, i)) << i;
  std::vector<SegmentPathInfo> paths;
  ASSERT_EQ(engine->getSegmentPaths(seg, paths, local.data(), target.addr()), 0);
  ASSERT_FALSE(paths.empty());
  for (const SegmentPathInfo& p : paths) {
    EXPECT_EQ(p.local_device.rfind("tcp/", 0), 0u) << p.local_device;
    EXPECT_EQ(p.remote_device.rfind("tcp/", 0), 0u) << p.remote_device;
  }
  EXPECT_EQ(engine->unregisterLocalMemory(local.data()), 0);
  EXPECT_EQ(target.stop(), 0) << target.log();
}

// MC_FORCE_HCA without a usable RDMA device: init fails naming the knob.
TEST(TeKnobs, ForceHcaWithoutAnRdmaDeviceFailsInit) {
  mc::test::LogCapture sink(google::GLOG_ERROR);
  ScopedEnv env({{"MC_FORCE_HCA", "y"}, {"MC_IB_DEVICES", "mc_no_such_hca"}});
  TransferEngine engine;
  EXPECT_NE(engine.init("P2PHANDSHAKE", "127.0.0.1"), 0);
  EXPECT_NE(sink.text().find("MC_FORCE_HCA=y, but no RDMA device is usable"), std::string::npos)
      << sink.text();
}

// setConfig: one engine's knob over the process's (MC_TLS=sm in the
// environment, tcp for this engine), refused after init and for a name that
// is not a knob; getTransports says what init opened.
TEST(TeKnobs, SetConfigOverridesTheProcessForOneEngine) {
  if (!uct::find_component("tcp") || !uct::find_component("sm")) {
    GTEST_SKIP() << "tcp or sm transport is not available";
  }
  ScopedEnv env({{"MC_TLS", "sm"}, {"MC_NET_DEVICES", "lo"}});
  TransferEngine engine;
  EXPECT_TRUE(engine.getTransports().empty());
  EXPECT_EQ(engine.setConfig("TLS", "tcp"), -4);
  ASSERT_EQ(engine.setConfig("MC_TLS", "tcp"), 0);
  ASSERT_EQ(engine.init("P2PHANDSHAKE", "127.0.0.1"), 0);
  EXPECT_EQ(engine.getTransports(), std::vector<std::string>{"tcp"});
  EXPECT_EQ(engine.setConfig("MC_TLS", "sm"), -12);
  TransferEngine other;
  ASSERT_EQ(other.init("P2PHANDSHAKE", "127.0.0.1"), 0);
  EXPECT_EQ(other.getTransports(), std::vector<std::string>{"sm"});
}

// Mooncake's four-argument init: the port asked for is the one served on;
// 0 picks one of the range. Under P2PHANDSHAKE the segment is ip:port.
TEST(TeKnobs, FourArgumentInitServesOnTheHostAndPortGiven) {
  ScopedEnv env({{"MC_MIN_RPC_PORT", "15000"}, {"MC_MAX_RPC_PORT", "17000"}});
  auto any = std::make_unique<TransferEngine>();
  ASSERT_EQ(any->init("P2PHANDSHAKE", "node-a", "127.0.0.1", 0), 0);
  const std::string ip_port = any->getLocalIpAndPort();
  EXPECT_EQ(ip_port.rfind("127.0.0.1:", 0), 0u) << ip_port;
  const uint16_t port = port_of(ip_port);
  EXPECT_GE(port, 15000);
  EXPECT_LE(port, 17000);
  any.reset();  // the port is free again
  TransferEngine fixed;
  ASSERT_EQ(fixed.init("P2PHANDSHAKE", "node-b", "127.0.0.1", port), 0);
  EXPECT_EQ(fixed.getLocalIpAndPort(), "127.0.0.1:" + std::to_string(port));
  TransferEngine empty;
  EXPECT_NE(empty.init("P2PHANDSHAKE", "", "127.0.0.1", 0), 0);
}

}  // namespace
}  // namespace mc::te::test
