// SPDX-License-Identifier: Apache-2.0
// The Transfer Engine's RPC listener against hostile clients (truncated,
// foreign, oversized and malformed requests, each followed by a good one; a
// huge segment name that must not be echoed whole),
// the shared secret MC_AUTH_TOKEN (listener and two real processes) and the
// bind address MC_RPC_BIND_ADDR.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <random>

#include "common/log_capture.h"
#include "te/te_test_util.h"
#include "ucp/te/handshake.h"
#include "ucp/te/rpc_server.h"
#include "ucs/sys/sys.h"
#include "uct/base/component_loader.h"

namespace mc::te::test {
namespace {

constexpr uint64_t kWaitNs = 10'000'000'000ULL;  // a hang detector

std::unique_ptr<RpcServer> start_server(const std::string& bind_ip, const std::string& token) {
  RpcServer::Params p;
  p.bind_ip = bind_ip;
  p.min_port = 20000;
  p.max_port = 40000;
  p.max_length = 4096;
  p.io_timeout = std::chrono::seconds(2);
  p.auth_token = token;
  auto s =
      RpcServer::start(p, [](const std::string& name, std::string* error) -> Result<std::string> {
        if (name != "seg") {
          *error = "no segment '" + name + "'";
          return Status::NoElem;
        }
        return std::string("{\"ok\":1}");
      });
  return s.ok() ? std::move(*s) : nullptr;
}

Result<std::string> ask(const std::string& host, uint16_t port, std::string* why,
                        const std::string& token = {}) {
  return handshake_get_segment(host, port, "seg", 4096, std::chrono::seconds(5), why, token);
}

int raw_connect(uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// What the listener did with a request: answered with an error frame (its
// code), or closed the connection without an answer (0).
int outcome(int fd) {
  uint8_t hdr[kHandshakeHeaderSize];
  std::string why;
  if (recv_all(fd, hdr, sizeof(hdr), ucs::monotonic_ns() + kWaitNs, &why) != Status::Ok) {
    return 0;
  }
  Result<FrameHeader> h = decode_frame_header(hdr, 1 << 20, &why);
  EXPECT_TRUE(h.ok()) << why;
  return h.ok() ? -static_cast<int>(h->code) : 0;
}

TEST(TeRpcHostile, MalformedTruncatedForeignAndOversizedRequests) {
  mc::test::LogCapture log;
  auto server = start_server("127.0.0.1", "");
  ASSERT_NE(server, nullptr);
  const uint16_t port = server->port();
  auto frame = [](uint16_t code, std::string_view payload) { return encode_frame(code, payload); };
  struct Case {
    const char* what;
    std::vector<uint8_t> bytes;
    bool half_close;  // shut down our side after sending
    int expect;       // error code answered, 0: dropped without an answer
  };
  std::vector<Case> cases;
  cases.push_back({"truncated header", {0x4d, 0x43, 0x54, 0x45, 0x01}, true, 0});
  {
    auto f = frame(kGetSegment, "seg");
    f[0] ^= 0xff;
    cases.push_back({"foreign magic", f, false, 0});
  }
  {
    auto f = frame(kGetSegment, "seg");
    f[4] = 9;
    cases.push_back({"newer version", f, false, static_cast<int>(Status::VersionMismatch)});
  }
  cases.push_back({"unknown code", frame(77, "seg"), false, static_cast<int>(Status::Unsupported)});
  {
    auto f = frame(kGetSegment, "seg");
    f[8] = 0x00, f[9] = 0x00, f[10] = 0x00, f[11] = 0x80;  // 2 GiB
    cases.push_back({"oversized length", f, false, static_cast<int>(Status::MessageTruncated)});
  }
  {
    auto f = frame(kGetSegment, std::string(100, 's'));
    f.resize(kHandshakeHeaderSize + 10);  // body cut short
    cases.push_back({"truncated body", f, true, 0});
  }
  {
    std::string payload = encode_auth_request("tok", "seg");
    payload[0] = '\x7f';  // token length past the payload
    cases.push_back({"token length past the payload", frame(kGetSegmentAuth, payload), false, 0});
  }
  cases.push_back(
      {"unknown segment", frame(kGetSegment, "nope"), false, static_cast<int>(Status::NoElem)});
  std::mt19937 rng(5);
  for (int i = 0; i < 8; ++i) {
    std::vector<uint8_t> junk(1 + rng() % 64);
    for (auto& b : junk) b = static_cast<uint8_t>(rng());
    cases.push_back({"random bytes", junk, true, -1});  // either outcome
  }
  for (const Case& c : cases) {
    const int fd = raw_connect(port);
    ASSERT_GE(fd, 0) << c.what;
    std::string why;
    ASSERT_EQ(send_all(fd, c.bytes.data(), c.bytes.size(), ucs::monotonic_ns() + kWaitNs, &why),
              Status::Ok)
        << c.what << ": " << why;
    if (c.half_close) ::shutdown(fd, SHUT_WR);
    const int got = outcome(fd);
    if (c.expect >= 0 || got != 0) {
      if (c.expect != -1) {
        EXPECT_EQ(got, c.expect) << c.what;
      }
    }
    ::close(fd);
    // A well-behaved client is served after each.
    Result<std::string> good = ask("127.0.0.1", port, &why);
    ASSERT_TRUE(good.ok()) << "after " << c.what << ": " << why;
    EXPECT_EQ(*good, "{\"ok\":1}");
  }
  // Every warning names the peer it is about.
  size_t warnings = 0;
  for (const std::string& line : log.lines()) {
    if (line.find("rpc listener") == std::string::npos) continue;
    ++warnings;
    EXPECT_NE(line.find("127.0.0.1:"), std::string::npos) << line;
  }
  EXPECT_GT(warnings, 0u);
}

// A segment name as long as a request may be (MC_HANDSHAKE_MAX_LENGTH) is
// not echoed whole in the error reply: the reply is cut to a small bound,
// keeping both ends of the text. Before, it came back larger than the
// limit, and the client refused it as oversized.
TEST(TeRpcHostile, HugeSegmentNameGetsAShortErrorReply) {
  RpcServer::Params p;
  p.bind_ip = "127.0.0.1";
  p.min_port = 20000;
  p.max_port = 40000;
  p.max_length = 1 << 20;
  p.io_timeout = std::chrono::seconds(20);
  auto s = RpcServer::start(p, [](const std::string& name, std::string* error) {
    *error = "no segment '" + name + "' here (this is 'seg')";
    return Result<std::string>(Status::NoElem);
  });
  ASSERT_TRUE(s.ok());
  const int fd = raw_connect((*s)->port());
  ASSERT_GE(fd, 0);
  const std::vector<uint8_t> req = encode_frame(kGetSegment, std::string(p.max_length, 'n'));
  std::string why;
  ASSERT_EQ(send_all(fd, req.data(), req.size(), ucs::monotonic_ns() + kWaitNs, &why), Status::Ok)
      << why;
  uint8_t hdr[kHandshakeHeaderSize];
  ASSERT_EQ(recv_all(fd, hdr, sizeof(hdr), ucs::monotonic_ns() + kWaitNs, &why), Status::Ok) << why;
  Result<FrameHeader> h = decode_frame_header(hdr, 4 << 20, &why);
  ASSERT_TRUE(h.ok()) << why;
  EXPECT_EQ(-static_cast<int>(h->code), static_cast<int>(Status::NoElem));
  ASSERT_LE(h->length, kRpcMaxErrorText);
  ASSERT_LT(h->length, p.max_length);
  std::string text(h->length, '\0');
  ASSERT_EQ(recv_all(fd, text.data(), text.size(), ucs::monotonic_ns() + kWaitNs, &why), Status::Ok)
      << why;
  EXPECT_TRUE(text.starts_with("no segment 'nnn")) << text;
  EXPECT_NE(text.find("bytes cut"), std::string::npos) << text;
  EXPECT_TRUE(text.ends_with("' here (this is 'seg')")) << text;
  ::close(fd);
  // The client's side: a short error naming the cause, not an oversized reply.
  EXPECT_EQ(handshake_get_segment("127.0.0.1", (*s)->port(), std::string(p.max_length - 64, 'n'),
                                  p.max_length, std::chrono::seconds(20), &why)
                .status(),
            Status::NoElem)
      << why;
}

TEST(TeRpcAuth, TokenIsRequiredWhenSet) {
  auto server = start_server("127.0.0.1", "s3cret");
  ASSERT_NE(server, nullptr);
  std::string why;
  EXPECT_EQ(ask("127.0.0.1", server->port(), &why).status(), Status::Rejected);
  EXPECT_NE(why.find("authentication failed"), std::string::npos) << why;
  EXPECT_EQ(ask("127.0.0.1", server->port(), &why, "s3cres").status(), Status::Rejected);
  EXPECT_EQ(ask("127.0.0.1", server->port(), &why, "s3cret-longer").status(), Status::Rejected);
  Result<std::string> good = ask("127.0.0.1", server->port(), &why, "s3cret");
  ASSERT_TRUE(good.ok()) << why;
  EXPECT_EQ(*good, "{\"ok\":1}");
  // A listener without a token takes a client that sends one.
  auto open = start_server("127.0.0.1", "");
  ASSERT_NE(open, nullptr);
  EXPECT_TRUE(ask("127.0.0.1", open->port(), &why, "s3cret").ok()) << why;
}

TEST(TeRpcAuth, AuthRequestCodec) {
  std::string token, seg;
  ASSERT_EQ(decode_auth_request(encode_auth_request("t", "a:1"), &token, &seg), Status::Ok);
  EXPECT_EQ(token, "t");
  EXPECT_EQ(seg, "a:1");
  ASSERT_EQ(decode_auth_request(encode_auth_request("", ""), &token, &seg), Status::Ok);
  EXPECT_TRUE(token.empty() && seg.empty());
  EXPECT_EQ(decode_auth_request("\x01\x00", &token, &seg), Status::BadData);
  EXPECT_EQ(decode_auth_request(std::string("\x05\x00\x00\x00"
                                            "abc",
                                            7),
                                &token, &seg),
            Status::BadData);
  EXPECT_TRUE(token_equal("abc", "abc"));
  EXPECT_FALSE(token_equal("abc", "abd"));
  EXPECT_FALSE(token_equal("abc", "ab"));
}

TEST(TeRpcBind, ListenerIsReachableOnlyOnItsAddress) {
  auto server = start_server("127.0.0.2", "");
  ASSERT_NE(server, nullptr);
  std::string why;
  EXPECT_TRUE(ask("127.0.0.2", server->port(), &why).ok()) << why;
  EXPECT_EQ(ask("127.0.0.1", server->port(), &why).status(), Status::Unreachable) << why;
}

// Two real processes: the target requires a token; the engine here opens its
// segment only with the same token, and the target logs each refusal.
class TeAuthProcesses : public testing::Test {
 protected:
  void SetUp() override {
    if (uct::find_component("tcp") == nullptr) GTEST_SKIP() << "tcp transport is not available";
  }
  std::map<std::string, std::string> env_ = loopback_env("tcp");
};

TEST_F(TeAuthProcesses, PeerWithoutTheTokenIsRefusedAndLogged) {
  auto target_env = env_;
  target_env["MC_AUTH_TOKEN"] = "let-me-in";
  target_env["MC_RPC_BIND_ADDR"] = "127.0.0.1";
  TargetProcess target;
  ASSERT_TRUE(target.start("P2PHANDSHAKE", "127.0.0.1", 65536, 3, target_env));
  for (const char* token : {"", "wrong"}) {
    auto env = env_;
    if (*token) env["MC_AUTH_TOKEN"] = token;
    ScopedEnv scoped(env);
    TransferEngine engine;
    ASSERT_EQ(engine.init("P2PHANDSHAKE", "127.0.0.1"), 0);
    EXPECT_LT(engine.openSegment(target.segment()), 0) << "token '" << token << "'";
  }
  const std::string log = target.log();
  EXPECT_NE(log.find("refused 127.0.0.1:"), std::string::npos) << log;
  EXPECT_NE(log.find("no auth token (MC_AUTH_TOKEN is set here)"), std::string::npos) << log;
  EXPECT_NE(log.find("wrong auth token"), std::string::npos) << log;

  auto env = env_;
  env["MC_AUTH_TOKEN"] = "let-me-in";
  ScopedEnv scoped(env);
  TransferEngine engine;
  ASSERT_EQ(engine.init("P2PHANDSHAKE", "127.0.0.1"), 0);
  const SegmentHandle seg = engine.openSegment(target.segment());
  ASSERT_GE(seg, 0);
  std::vector<uint8_t> local(65536);
  ASSERT_EQ(engine.registerLocalMemory(local.data(), local.size()), 0);
  auto r = run_batch(engine, {{TransferRequest::READ, local.data(), seg, target.addr(), 65536}});
  ASSERT_EQ(r.size(), 1u);
  ASSERT_EQ(r[0].s, COMPLETED);
  for (size_t i = 0; i < local.size(); ++i) ASSERT_EQ(local[i], pattern(3, i)) << i;
  EXPECT_EQ(target.stop(), 0) << target.log();
}

}  // namespace
}  // namespace mc::te::test
