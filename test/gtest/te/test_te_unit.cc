// SPDX-License-Identifier: Apache-2.0
// Transfer Engine parts on their own: the handshake frame codec (bounds,
// version, length), the RPC listener against well- and ill-behaved clients
// over real sockets, the endpoint store's eviction and draining, locations.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ucp/te/endpoint_store.h"
#include "ucp/te/handshake.h"
#include "ucp/te/location.h"
#include "ucp/te/rpc_server.h"
#include "ucs/sys/sys.h"

namespace mc::te::test {
namespace {

using ucs::Result;
using ucs::Status;

TEST(TeHandshake, FrameRoundTrip) {
  const std::vector<uint8_t> f = encode_frame(kGetSegment, "seg");
  ASSERT_EQ(f.size(), kHandshakeHeaderSize + 3);
  std::string why;
  Result<FrameHeader> h = decode_frame_header({f.data(), kHandshakeHeaderSize}, 1024, &why);
  ASSERT_TRUE(h.ok()) << why;
  EXPECT_EQ(h->code, kGetSegment);
  EXPECT_EQ(h->length, 3u);
}

TEST(TeHandshake, DecoderRejectsTruncatedForeignNewerAndOversized) {
  std::vector<uint8_t> f = encode_frame(kGetSegment, std::string(100, 'x'));
  std::string why;
  EXPECT_EQ(decode_frame_header({f.data(), 5}, 1024, &why).status(), Status::BadData);
  EXPECT_NE(why.find("truncated"), std::string::npos) << why;
  std::vector<uint8_t> bad = f;
  bad[0] ^= 0xff;
  EXPECT_EQ(decode_frame_header({bad.data(), kHandshakeHeaderSize}, 1024, &why).status(),
            Status::BadData);
  EXPECT_NE(why.find("magic"), std::string::npos) << why;
  bad = f;
  bad[4] = kHandshakeVersion + 1;
  EXPECT_EQ(decode_frame_header({bad.data(), kHandshakeHeaderSize}, 1024, &why).status(),
            Status::VersionMismatch);
  EXPECT_NE(why.find("version"), std::string::npos) << why;
  EXPECT_EQ(decode_frame_header({f.data(), kHandshakeHeaderSize}, 99, &why).status(),
            Status::MessageTruncated);
  EXPECT_NE(why.find("MC_HANDSHAKE_MAX_LENGTH=99"), std::string::npos) << why;
}

TEST(TeHandshake, SplitHostPort) {
  auto hp = split_host_port("10.0.0.1:15001");
  ASSERT_TRUE(hp.ok());
  EXPECT_EQ(hp->first, "10.0.0.1");
  EXPECT_EQ(hp->second, 15001);
  for (const char* bad : {"10.0.0.1", "10.0.0.1:", ":80", "h:0", "h:65536", "h:12x"}) {
    EXPECT_FALSE(split_host_port(bad).ok()) << bad;
  }
}

class TeRpcServer : public testing::Test {
 protected:
  void start(size_t max_length, std::string reply) {
    RpcServer::Params p;
    p.bind_ip = "127.0.0.1";
    p.min_port = 20000;
    p.max_port = 40000;
    p.max_length = max_length;
    p.io_timeout = std::chrono::seconds(2);
    auto s = RpcServer::start(
        p, [reply](const std::string& name, std::string* error) -> Result<std::string> {
          if (name != "seg") {
            *error = "no segment '" + name + "'";
            return Status::NoElem;
          }
          return reply;
        });
    ASSERT_TRUE(s.ok());
    server_ = std::move(*s);
    ASSERT_GE(server_->port(), 20000);
    ASSERT_LE(server_->port(), 40000);
  }
  Result<std::string> ask(const std::string& name, size_t max_length, std::string* why) {
    return handshake_get_segment("127.0.0.1", server_->port(), name, max_length,
                                 std::chrono::seconds(5), why);
  }
  std::unique_ptr<RpcServer> server_;
};

TEST_F(TeRpcServer, ServesTheDescriptorAndNamesUnknownSegments) {
  start(1024, "{\"x\":1}");
  std::string why;
  Result<std::string> got = ask("seg", 1024, &why);
  ASSERT_TRUE(got.ok()) << why;
  EXPECT_EQ(*got, "{\"x\":1}");
  EXPECT_EQ(ask("other", 1024, &why).status(), Status::NoElem);
  EXPECT_NE(why.find("no segment 'other'"), std::string::npos) << why;
}

TEST_F(TeRpcServer, ReplyOverTheLimitIsRefusedOnBothSides) {
  start(64, std::string(100, 'j'));
  std::string why;
  // The server will not send more than its limit.
  EXPECT_EQ(ask("seg", 1 << 20, &why).status(), Status::MessageTruncated);
  EXPECT_NE(why.find("MC_HANDSHAKE_MAX_LENGTH"), std::string::npos) << why;
  server_.reset();
  start(1 << 20, std::string(100, 'j'));
  // The client will not accept more than its own.
  EXPECT_EQ(ask("seg", 64, &why).status(), Status::MessageTruncated);
  EXPECT_NE(why.find("exceeds MC_HANDSHAKE_MAX_LENGTH=64"), std::string::npos) << why;
}

TEST_F(TeRpcServer, GarbageAndSilentClientsDoNotStopIt) {
  start(1024, "{}");
  for (int mode = 0; mode < 3; ++mode) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(server_->port());
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
    if (mode == 0) {
      const char junk[] = "GET / HTTP/1.1\r\n\r\n";
      ASSERT_GT(::send(fd, junk, sizeof(junk), 0), 0);
    } else if (mode == 1) {
      std::vector<uint8_t> f = encode_frame(kGetSegment, "seg");
      f[8] = 0xff;  // length far over the limit
      f[9] = 0xff;
      ASSERT_GT(::send(fd, f.data(), kHandshakeHeaderSize, 0), 0);
      uint8_t hdr[kHandshakeHeaderSize];
      std::string why;
      ASSERT_EQ(recv_all(fd, hdr, sizeof(hdr), ucs::monotonic_ns() + 5000000000ULL, &why),
                Status::Ok)
          << why;
      Result<FrameHeader> h = decode_frame_header(hdr, 1024, &why);
      ASSERT_TRUE(h.ok()) << why;
      EXPECT_EQ(-static_cast<int>(h->code), static_cast<int>(Status::MessageTruncated));
    }
    // mode 2: connects and says nothing; closed below.
    ::close(fd);
  }
  std::string why;
  EXPECT_TRUE(ask("seg", 1024, &why).ok()) << why;
}

TEST(TeRpcServerPorts, GivenPortBusyFailsAndRangeSkipsIt) {
  RpcServer::Params p;
  p.bind_ip = "127.0.0.1";
  p.min_port = 30000;
  p.max_port = 45000;
  auto provider = [](const std::string&, std::string*) -> Result<std::string> {
    return std::string("{}");
  };
  auto first = RpcServer::start(p, provider);
  ASSERT_TRUE(first.ok());
  p.port = (*first)->port();
  EXPECT_EQ(RpcServer::start(p, provider).status(), Status::Busy);
  p.port = 0;
  p.min_port = p.max_port = (*first)->port();
  EXPECT_EQ(RpcServer::start(p, provider).status(), Status::Busy);
}

TEST(TeHandshakeClient, RefusedPortIsUnreachableNamingIt) {
  Result<uint16_t> port = ucs::find_free_tcp_port();
  ASSERT_TRUE(port.ok());
  std::string why;
  EXPECT_EQ(
      handshake_get_segment("127.0.0.1", *port, "x", 1024, std::chrono::seconds(2), &why).status(),
      Status::Unreachable);
  EXPECT_NE(why.find("127.0.0.1:" + std::to_string(*port)), std::string::npos) << why;
}

class TeEndpointStore : public testing::TestWithParam<EndpointStoreType> {};

TEST_P(TeEndpointStore, EvictedEntriesDrainBeforeTheyGo) {
  EndpointStore store(GetParam(), 2);
  std::vector<std::weak_ptr<EpEntry>> made;
  for (int32_t seg = 0; seg < 5; ++seg) {
    auto e = std::make_shared<EpEntry>();
    e->segment = seg;
    e->inflight = seg == 0 ? 1 : 0;  // segment 0 has work in flight
    made.push_back(e);
    store.insert(seg, e);
    EXPECT_LE(store.size(), 2u);
  }
  EXPECT_EQ(store.size(), 2u);
  // Three were evicted; the one with work in flight stays alive.
  EXPECT_EQ(store.counters().inserted, 5u);
  EXPECT_EQ(store.counters().evicted, 3u);
  EXPECT_EQ(store.counters().evicted_busy, 1u);
  EXPECT_EQ(store.reap(), 1u);
  ASSERT_FALSE(made[0].expired());
  EXPECT_TRUE(made[1].expired());
  made[0].lock()->inflight = 0;
  EXPECT_EQ(store.reap(), 0u);
  EXPECT_TRUE(made[0].expired());
  store.remove(4);
  store.remove(4);  // no longer there: nothing taken out
  EXPECT_EQ(store.get(4), nullptr);
  EXPECT_EQ(store.size(), 1u);
  EXPECT_EQ(store.counters().removed, 1u);
  store.retire_all();
  EXPECT_EQ(store.size(), 0u);
  EXPECT_EQ(store.reap(), 0u);
}

INSTANTIATE_TEST_SUITE_P(Policies, TeEndpointStore,
                         testing::Values(EndpointStoreType::Sieve, EndpointStoreType::Fifo),
                         [](const auto& info) {
                           return info.param == EndpointStoreType::Sieve ? "Sieve" : "Fifo";
                         });

TEST(TeLocation, Syntax) {
  for (const char* ok : {"*", "cpu:0", "cpu:3", "cuda:0", "cuda:7"})
    EXPECT_TRUE(location_valid(ok)) << ok;
  for (const char* bad : {"", "cpu", "cpu:", "cpu:x", "gpu:0", "cuda:-1", "cpu:0 ", "*x"}) {
    EXPECT_FALSE(location_valid(bad)) << bad;
  }
}

TEST(TeLocation, OnlyCudaLocationsAreGpuMemory) {
  for (const char* gpu : {"cuda:0", "cuda:7"}) EXPECT_TRUE(location_is_gpu(gpu)) << gpu;
  for (const char* host : {"*", "cpu:0", "cpu:3", "", "cuda"}) {
    EXPECT_FALSE(location_is_gpu(host)) << host;
  }
}

TEST(TeLocation, DetectsTheNodeOfTouchedPages) {
  std::vector<uint8_t> buf(1 << 16, 1);
  std::string why;
  Result<std::string> loc = detect_location(buf.data(), buf.size(), &why);
  ASSERT_TRUE(loc.ok()) << why;
  EXPECT_TRUE(loc->starts_with("cpu:")) << *loc;
  EXPECT_TRUE(location_valid(*loc));
}

}  // namespace
}  // namespace mc::te::test
