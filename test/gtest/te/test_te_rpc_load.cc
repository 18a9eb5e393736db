// SPDX-License-Identifier: Apache-2.0
// The Transfer Engine's RPC listener under hostile load, over real sockets
// on loopback: hundreds of silent and trickling clients (from addresses of
// 127.0.0.0/8 other than the good client's) while a good client does
// handshakes, the caps on connections not yet answered, and the process out
// of file descriptors.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "common/fd_exhaustion.h"
#include "common/log_capture.h"
#include "ucp/te/handshake.h"
#include "ucp/te/rpc_server.h"
#include "ucp/te/te_config.h"
#include "ucs/config/sources.h"
#include "ucs/sys/sys.h"

namespace mc::te::test {
namespace {

using namespace std::chrono_literals;

constexpr uint64_t kWaitNs = 20'000'000'000ULL;  // a hang detector

const std::string kReply = "{\"segment\":\"seg\"}";

std::unique_ptr<RpcServer> start_server(RpcServer::Params p) {
  p.bind_ip = "127.0.0.1";
  p.min_port = 20000;
  p.max_port = 40000;
  auto s =
      RpcServer::start(p, [](const std::string& name, std::string* error) -> Result<std::string> {
        if (name != "seg") {
          *error = "no segment '" + name + "'";
          return Status::NoElem;
        }
        return kReply;
      });
  return s.ok() ? std::move(*s) : nullptr;
}

// A blocking connection from `src` (an address of 127.0.0.0/8) to
// 127.0.0.1:port; -1 when it fails.
int connect_from(const char* src, uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  ::inet_pton(AF_INET, src, &a.sin_addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    ::close(fd);
    return -1;
  }
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// True when the listener has closed `fd` (it never writes to a client that
// sent nothing), waiting at most `timeout_ms`.
bool closed_by_server(int fd, int timeout_ms) {
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, timeout_ms) != 1) return false;
  char b;
  return ::recv(fd, &b, 1, MSG_DONTWAIT) <= 0;
}

// The descriptor of "seg" over `fd`, asked with a raw request.
Result<std::string> raw_ask(int fd) {
  std::string why;
  const std::vector<uint8_t> req = encode_frame(kGetSegment, "seg");
  const uint64_t deadline = ucs::monotonic_ns() + kWaitNs;
  MC_RETURN_IF_ERROR(send_all(fd, req.data(), req.size(), deadline, &why));
  uint8_t hdr[kHandshakeHeaderSize];
  MC_RETURN_IF_ERROR(recv_all(fd, hdr, sizeof(hdr), deadline, &why));
  Result<FrameHeader> h = decode_frame_header(hdr, 1 << 20, &why);
  if (!h.ok()) return h.status();
  std::string body(h->length, '\0');
  MC_RETURN_IF_ERROR(recv_all(fd, body.data(), body.size(), deadline, &why));
  if (h->code != 0) return Status::Rejected;
  return body;
}

// Hostile clients on their own thread: `silent` connections that never send
// a byte, spread over `sources`, and `tricklers` (from the last source) that
// send a request one byte every 100 ms. Each one the listener closes is
// opened again, at most 20 per 10 ms round.
class Attack {
 public:
  Attack(uint16_t port, std::vector<const char*> sources, int silent, int tricklers)
      : port_(port), sources_(std::move(sources)), silent_(silent), tricklers_(tricklers) {
    thread_ = std::thread([this] { run(); });
  }
  ~Attack() {
    stop_ = true;
    thread_.join();
  }
  /// Connections the listener closed so far.
  uint64_t closed() const { return closed_.load(); }
  /// True once every connection was opened at least once.
  bool ramped() const { return ramped_.load(); }

 private:
  struct Client {
    int fd = -1;
    bool trickler = false;
    size_t sent = 0;
  };

  void run() {
    std::vector<Client> clients(silent_ + tricklers_);
    for (int i = 0; i < tricklers_; ++i) clients[silent_ + i].trickler = true;
    // A request for a long name: at a byte per 100 ms it never ends in time.
    const std::vector<uint8_t> req = encode_frame(kGetSegment, std::string(200, 's'));
    auto open = [&](size_t i) {
      const char* src = clients[i].trickler ? sources_.back() : sources_[i % sources_.size()];
      clients[i].fd = connect_from(src, port_);
      clients[i].sent = 0;
    };
    for (size_t i = 0; i < clients.size() && !stop_; ++i) open(i);
    ramped_ = true;
    uint64_t round = 0;
    while (!stop_) {
      int reopened = 0;
      for (size_t i = 0; i < clients.size(); ++i) {
        Client& c = clients[i];
        if (c.fd >= 0 && !closed_by_server(c.fd, 0)) {
          if (c.trickler && round % 10 == 0 && c.sent < req.size()) {
            c.sent += ::send(c.fd, &req[c.sent], 1, MSG_NOSIGNAL) == 1;
          }
          continue;
        }
        if (c.fd >= 0) {
          ++closed_;
          ::close(c.fd);
          c.fd = -1;
        }
        if (reopened < 20) {
          open(i);
          ++reopened;
        }
      }
      ++round;
      std::this_thread::sleep_for(10ms);
    }
    for (Client& c : clients) {
      if (c.fd >= 0) ::close(c.fd);
    }
  }

  const uint16_t port_;
  const std::vector<const char*> sources_;
  const int silent_;
  const int tricklers_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> ramped_{false};
  std::atomic<uint64_t> closed_{0};
  std::thread thread_;
};

// Silent and trickling clients cost the slots they hold, not the good
// client's time: with 300 of them (and every one closed opened again) each
// handshake succeeds. Before, the listener served one connection at a time
// and a good client timed out behind them.
TEST(TeRpcLoad, SilentAndTricklingClientsDoNotShutOutAGoodOne) {
  RpcServer::Params p;
  p.io_timeout = 2s;
  auto server = start_server(p);
  ASSERT_NE(server, nullptr);
  mc::test::LogCapture log;
  Attack attack(server->port(), {"127.0.0.2", "127.0.0.3", "127.0.0.4"}, 300, 8);
  for (int i = 0; i < 40 || !attack.ramped(); ++i) {
    std::string why;
    Result<std::string> got =
        handshake_get_segment("127.0.0.1", server->port(), "seg", 1 << 20, 10s, &why);
    ASSERT_TRUE(got.ok()) << "handshake " << i << ": " << why;
    EXPECT_EQ(*got, kReply);
    ASSERT_LT(i, 100000) << "the attack never ramped up";
  }
  // The attack counts the closes it sees in its rounds, 10 ms apart: the
  // handshakes above can end before its first round after the ramp.
  for (int i = 0; i < 500 && attack.closed() == 0; ++i) std::this_thread::sleep_for(10ms);
  // Past the deadline the tricklers are closed too.
  const uint64_t closed_before = attack.closed();
  std::this_thread::sleep_for(3s);
  std::string why;
  ASSERT_TRUE(handshake_get_segment("127.0.0.1", server->port(), "seg", 1 << 20, 10s, &why).ok())
      << why;
  EXPECT_GT(closed_before, 0u) << "the caps closed no connection";
  EXPECT_GT(attack.closed(), closed_before) << "the deadline closed no connection";
  // Each warning names its peer, and they come at a bounded rate.
  size_t warnings = 0;
  for (const std::string& line : log.lines()) {
    if (line.find("rpc listener") == std::string::npos) continue;
    ++warnings;
    EXPECT_NE(line.find("127.0.0."), std::string::npos) << line;
  }
  EXPECT_GT(warnings, 0u);
  EXPECT_LT(warnings, 200u) << "the log is flooded";
}

// A new connection over a cap closes the oldest: first of its own peer
// (MC_RPC_MAX_PENDING_PER_PEER), then of all (MC_RPC_MAX_PENDING); the
// newest client is served.
TEST(TeRpcLoad, PendingCapsCloseTheOldestFirst) {
  RpcServer::Params p;
  p.io_timeout = 60s;
  p.max_pending = 8;
  p.max_pending_per_peer = 4;
  auto server = start_server(p);
  ASSERT_NE(server, nullptr);
  std::vector<int> same;  // from 127.0.0.2
  for (int i = 0; i < 10; ++i) {
    same.push_back(connect_from("127.0.0.2", server->port()));
    ASSERT_GE(same.back(), 0);
  }
  for (int i = 0; i < 6; ++i) EXPECT_TRUE(closed_by_server(same[i], 20000)) << i;
  std::vector<int> others;  // one each from 127.0.0.3-7
  for (int i = 0; i < 5; ++i) {
    const std::string src = "127.0.0." + std::to_string(3 + i);
    others.push_back(connect_from(src.c_str(), server->port()));
    ASSERT_GE(others.back(), 0);
  }
  // Nine pending for eight places: the oldest of all goes.
  EXPECT_TRUE(closed_by_server(same[6], 20000));
  for (int i = 7; i < 10; ++i) EXPECT_FALSE(closed_by_server(same[i], 200)) << i;
  for (int fd : others) EXPECT_FALSE(closed_by_server(fd, 0));
  // A good client from the crowded peer gets in (it closes same[7]).
  const int good = connect_from("127.0.0.2", server->port());
  ASSERT_GE(good, 0);
  Result<std::string> got = raw_ask(good);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, kReply);
  for (int fd : same) ::close(fd);
  for (int fd : others) ::close(fd);
  ::close(good);
}

// Out of descriptors, the listener pauses instead of spinning on a socket
// that stays readable, logs a few lines, and serves the client that waited
// in the backlog once descriptors are back. Before, it spun at full CPU and
// logged every failed accept.
TEST(TeRpcLoad, OutOfDescriptorsItPausesThenServesWhoWaited) {
  RpcServer::Params p;
  p.io_timeout = 10s;
  auto server = start_server(p);
  ASSERT_NE(server, nullptr);
  const int waiting = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);  // made while we can
  ASSERT_GE(waiting, 0);
  size_t exhausted_lines = 0;
  std::chrono::microseconds cpu{};
  const std::chrono::milliseconds window = 2000ms;
  {
    mc::test::LogCapture log;
    mc::test::FdExhaustion exhaust;
    ASSERT_TRUE(exhaust.ok());
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(server->port());
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::connect(waiting, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
    const auto cpu0 = mc::test::process_cpu_time();
    std::this_thread::sleep_for(window);
    cpu = mc::test::process_cpu_time() - cpu0;
    exhaust.release();
    for (const std::string& line : log.lines()) {
      if (line.find("Too many open files") != std::string::npos) ++exhausted_lines;
    }
    EXPECT_GE(exhausted_lines, 1u) << log.text();
  }
  EXPECT_LE(exhausted_lines, 5u) << "the log is flooded";
  // A spinning thread takes a core; this one waits (generous bound).
  EXPECT_LT(cpu, window / 4) << "the listener spins";
  Result<std::string> got = raw_ask(waiting);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, kReply);
  ::close(waiting);
  std::string why;
  EXPECT_TRUE(handshake_get_segment("127.0.0.1", server->port(), "seg", 1 << 20, 10s, &why).ok())
      << why;
}

// The caps' knobs and their defaults, which are also RpcServer::Params'.
TEST(TeRpcLoad, CapKnobsAndTheirDefaults) {
  Result<TeConfig> cfg =
      ucs::config::read_table<TeConfig>(te_config_table(), *ucs::config::Sources::from({}, {}));
  ASSERT_TRUE(cfg.ok());
  const RpcServer::Params defaults;
  EXPECT_EQ(cfg->rpc_max_pending, 64u);
  EXPECT_EQ(cfg->rpc_max_pending_per_peer, 16u);
  EXPECT_EQ(defaults.max_pending, cfg->rpc_max_pending);
  EXPECT_EQ(defaults.max_pending_per_peer, cfg->rpc_max_pending_per_peer);
  cfg = ucs::config::read_table<TeConfig>(
      te_config_table(),
      *ucs::config::Sources::from(
          {{"MC_RPC_MAX_PENDING", "8"}, {"MC_RPC_MAX_PENDING_PER_PEER", "2"}}, {}));
  ASSERT_TRUE(cfg.ok());
  EXPECT_EQ(cfg->rpc_max_pending, 8u);
  EXPECT_EQ(cfg->rpc_max_pending_per_peer, 2u);
  std::string error;
  EXPECT_FALSE(
      ucs::config::read_table<TeConfig>(
          te_config_table(), *ucs::config::Sources::from({{"MC_RPC_MAX_PENDING", "0"}}, {}), &error)
          .ok());
  EXPECT_NE(error.find("MC_RPC_MAX_PENDING"), std::string::npos) << error;
}

}  // namespace
}  // namespace mc::te::test
