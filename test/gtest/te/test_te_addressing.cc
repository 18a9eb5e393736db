// SPDX-License-Identifier: Apache-2.0
// Segment names and addresses beyond IPv4 (host names, IPv6 in brackets)
// over real sockets: P2PHANDSHAKE segment names, the address an engine
// publishes, Mooncake's four-argument init.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

#include "te/te_test_util.h"
#include "ucp/te/handshake.h"
#include "ucs/status/status.h"
#include "uct/base/component_loader.h"

namespace mc::te::test {
namespace {

constexpr size_t kSize = 1 << 20;
constexpr unsigned kSeed = 11;

// True when this machine can listen on ::1.
bool have_ipv6_loopback() {
  const int fd = ::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in6 a{};
  a.sin6_family = AF_INET6;
  a.sin6_addr = in6addr_loopback;
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
  ::close(fd);
  return ok;
}

// Reads the target's buffer through `engine` from segment `name` and checks
// it holds pattern `seed`; writes pattern `next` and reads it back.
void read_write_back(TransferEngine& engine, const std::string& name, const TargetProcess& t,
                     unsigned seed, unsigned next) {
  const SegmentHandle seg = engine.openSegment(name);
  ASSERT_GE(seg, 0) << name;
  std::vector<uint8_t> local(kSize, 0);
  ASSERT_EQ(engine.registerLocalMemory(local.data(), local.size(), "cpu:0"), 0);
  auto r = run_batch(engine, {{TransferRequest::READ, local.data(), seg, t.addr(), kSize}});
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].s, COMPLETED);
  for (size_t i = 0; i < kSize; ++i) ASSERT_EQ(local[i], pattern(seed, i)) << "byte " << i;
  for (size_t i = 0; i < kSize; ++i) local[i] = pattern(next, i);
  auto w = run_batch(engine, {{TransferRequest::WRITE, local.data(), seg, t.addr(), kSize}});
  EXPECT_EQ(w[0].s, COMPLETED);
  std::memset(local.data(), 0, kSize);
  r = run_batch(engine, {{TransferRequest::READ, local.data(), seg, t.addr(), kSize}});
  EXPECT_EQ(r[0].s, COMPLETED);
  for (size_t i = 0; i < kSize; ++i) ASSERT_EQ(local[i], pattern(next, i)) << "byte " << i;
  EXPECT_EQ(engine.unregisterLocalMemory(local.data()), 0);
  EXPECT_EQ(engine.closeSegment(seg), 0);
}

TEST(TeAddressing, SplitAndJoinHostPort) {
  auto v6 = split_host_port("[::1]:15001");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->first, "::1");
  EXPECT_EQ(v6->second, 15001);
  auto name = split_host_port("node1:15001");
  ASSERT_TRUE(name.ok());
  EXPECT_EQ(name->first, "node1");
  auto full = split_host_port("[fe80::1:2]:80");
  ASSERT_TRUE(full.ok());
  EXPECT_EQ(full->first, "fe80::1:2");
  for (const char* bad :
       {"[::1]", "[::1]:", "[zz]:80", "[]:80", "::1]:80", "[::1:80", "a[b]:80", "[10.0.0.1]:80"}) {
    EXPECT_FALSE(split_host_port(bad).ok()) << bad;
  }
  EXPECT_EQ(join_host_port("::1", 15001), "[::1]:15001");
  EXPECT_EQ(join_host_port("10.0.0.1", 1), "10.0.0.1:1");
  EXPECT_EQ(join_host_port("node1", 2), "node1:2");
}

// A target process at ::1 (its segment "[::1]:port"), this engine at ::1 too.
TEST(TeAddressing, Ipv6SegmentBetweenTwoProcesses) {
  if (!have_ipv6_loopback()) GTEST_SKIP() << "no IPv6 loopback here";
  TargetProcess target;
  ASSERT_TRUE(target.start("P2PHANDSHAKE", "::1", kSize, kSeed, loopback_env("tcp")));
  EXPECT_EQ(target.segment().rfind("[::1]:", 0), 0u) << target.segment();
  ScopedEnv env(loopback_env("tcp"));
  TransferEngine engine;
  ASSERT_EQ(engine.init("P2PHANDSHAKE", "::1"), 0);
  EXPECT_EQ(engine.getLocalIpAndPort().rfind("[::1]:", 0), 0u) << engine.getLocalIpAndPort();
  read_write_back(engine, target.segment(), target, kSeed, 77);
  // The same listener by its IPv4 name: one socket serves both.
  const auto hp = split_host_port(target.segment());
  ASSERT_TRUE(hp.ok());
  read_write_back(engine, "127.0.0.1:" + std::to_string(hp->second), target, 77, 78);
  // A notification to the IPv6 name arrives.
  EXPECT_EQ(engine.sendNotifyByName(target.segment(), {"v6", "hello"}), 0);
}

// A target named by a host name of /etc/hosts (localhost): it publishes its
// address; this engine opens it by that host name and by the address.
TEST(TeAddressing, HostNameSegmentBetweenTwoProcesses) {
  TargetProcess target;
  ASSERT_TRUE(target.start("P2PHANDSHAKE", "localhost", kSize, kSeed, loopback_env("tcp")));
  const auto hp = split_host_port(target.segment());
  ASSERT_TRUE(hp.ok()) << target.segment();
  auto engine = make_p2p_engine(loopback_env("tcp"));
  read_write_back(*engine, "localhost:" + std::to_string(hp->second), target, kSeed, 77);
  read_write_back(*engine, target.segment(), target, 77, 78);
  EXPECT_LT(engine->openSegment("localhost:1"), 0) << "nothing listens there";
}

// Mooncake's four-argument init with ip_or_host_name an IPv6 address or a
// host name: the address published is the one peers reach, and a second
// engine reaches it there.
TEST(TeAddressing, FourArgumentInitTakesIpv6AndHostNames) {
  ScopedEnv env(loopback_env("tcp"));
  TransferEngine by_name;
  ASSERT_EQ(by_name.init("P2PHANDSHAKE", "node-a", "localhost", 0), 0);
  EXPECT_EQ(by_name.getLocalIpAndPort().rfind("127.0.0.1:", 0), 0u) << by_name.getLocalIpAndPort();
  TransferEngine peer;
  ASSERT_EQ(peer.init("P2PHANDSHAKE", "127.0.0.1"), 0);
  EXPECT_GE(peer.openSegment(by_name.getLocalIpAndPort()), 0);
  if (!have_ipv6_loopback()) GTEST_SKIP() << "no IPv6 loopback here";
  TransferEngine by_v6;
  ASSERT_EQ(by_v6.init("P2PHANDSHAKE", "node-b", "::1", 0), 0);
  const std::string ip_port = by_v6.getLocalIpAndPort();
  EXPECT_EQ(ip_port.rfind("[::1]:", 0), 0u) << ip_port;
  const SegmentHandle seg = peer.openSegment(ip_port);
  ASSERT_GE(seg, 0);
  EXPECT_EQ(peer.sendNotifyByID(seg, {"n", "m"}), 0);
  std::vector<ReceivedNotify> got;
  ASSERT_EQ(by_v6.getNotifies(got), 0);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].sender, peer.getLocalIpAndPort());
  TransferEngine bad;
  EXPECT_NE(bad.init("P2PHANDSHAKE", "[::1:5"), 0);
}

}  // namespace
}  // namespace mc::te::test
