// SPDX-License-Identifier: Apache-2.0
// The tcp transport's listener under hostile load, on 127.0.0.1: peers that
// connect and never send their hello (the cap MC_TCP_MAX_PENDING_ACCEPTS and
// the deadline MC_TCP_ACCEPT_TIMEOUT), hundreds of them with trickling ones
// while a good endpoint transfers, and the process out of file descriptors.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <thread>

#include "common/fd_exhaustion.h"
#include "common/log_capture.h"
#include "ucs/config/sources.h"
#include "uct/api/ep.h"
#include "uct/api/iface.h"
#include "uct/base/component_loader.h"
#include "uct/tcp/tcp_wire.h"

namespace mc::uct::tcp {
namespace {

using namespace std::chrono_literals;
using Env = std::map<std::string, std::string>;

constexpr auto kDeadline = 20s;  // bounds waits for what must happen

struct Comp : Completion {
  bool done = false;
  Status result = Status::Ok;
  Comp() {
    func = [](Completion* c) {
      auto* self = static_cast<Comp*>(c);
      self->done = true;
      self->result = c->status;
    };
  }
};

// A blocking connection from `src` (an address of 127.0.0.0/8) to
// 127.0.0.1:port; -1 when it fails.
int connect_from(const char* src, uint16_t port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  inet_pton(AF_INET, src, &a.sin_addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    close(fd);
    return -1;
  }
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// True when the iface has closed `fd` (it sends nothing before a hello),
// waiting at most `timeout_ms`.
bool closed_by_peer(int fd, int timeout_ms) {
  pollfd p{fd, POLLIN, 0};
  if (poll(&p, 1, timeout_ms) != 1) return false;
  char b;
  return recv(fd, &b, 1, MSG_DONTWAIT) <= 0;
}

class TcpHostile : public ::testing::Test {
 protected:
  void SetUp() override {
    comp_ = find_component("tcp");
    ASSERT_NE(comp_, nullptr) << "libmc_uct_tcp.so was not loaded";
    auto sources = ucs::config::Sources::from({}, {});
    ASSERT_TRUE(sources.ok());
    auto md = comp_->md_open("tcp", *sources);
    ASSERT_TRUE(md.ok());
    md_ = std::move(*md);
  }

  std::unique_ptr<Iface> open_iface(const Env& env = {}) {
    auto sources = ucs::config::Sources::from(env, {});
    if (!sources.ok()) return nullptr;
    IfaceParams params;
    params.tl_name = "tcp";
    params.dev_name = "lo";
    params.sources = &*sources;
    auto iface = md_->iface_open(params);
    return iface.ok() ? std::move(*iface) : nullptr;
  }

  static uint16_t port_of(Iface& iface) { return *wire::decode_iface_addr(iface.iface_address()); }

  // A registered target buffer and its unpacked rkey.
  struct Target {
    std::vector<uint8_t> buf;
    std::unique_ptr<MemHandle> memh;
    std::unique_ptr<Rkey> rkey;
    uint64_t addr() const { return reinterpret_cast<uintptr_t>(buf.data()); }
  };
  void make_target(size_t size, Target* t) {
    t->buf.assign(size, 0);
    auto memh = md_->mem_reg(t->buf.data(), size, kAccessAll);
    ASSERT_TRUE(memh.ok());
    t->memh = std::move(*memh);
    std::vector<uint8_t> packed;
    ASSERT_EQ(md_->mkey_pack(*t->memh, &packed), Status::Ok);
    auto rkey = md_->rkey_unpack(packed);
    ASSERT_TRUE(rkey.ok());
    t->rkey = std::move(*rkey);
  }

  // A fresh endpoint a -> b puts `size` random bytes (seeded by `seed`)
  // into `t` and reads them back; the status of the first failing step.
  Status transfer(Iface& a, Iface& b, Target& t, size_t size, uint32_t seed) {
    auto ep = a.ep_create(b.device_address(), b.iface_address());
    if (!ep.ok()) return ep.status();
    std::vector<uint8_t> src(size), back(size);
    std::mt19937 rng(seed);
    for (auto& x : src) x = static_cast<uint8_t>(rng());
    Iov iov{src.data(), size, nullptr};
    Comp put;
    Status s = wait(a, (*ep)->put_zcopy(&iov, 1, t.addr(), *t.rkey, &put), put);
    if (s != Status::Ok) return s;
    Iov giov{back.data(), size, nullptr};
    Comp get;
    s = wait(a, (*ep)->get_zcopy(&giov, 1, t.addr(), *t.rkey, &get), get);
    if (s != Status::Ok) return s;
    if (std::memcmp(t.buf.data(), src.data(), size) != 0) return Status::BadData;
    return back == src ? Status::Ok : Status::BadData;
  }

  static Status wait(Iface& a, Status s, Comp& c) {
    if (s != Status::InProgress) return s;
    const auto end = std::chrono::steady_clock::now() + kDeadline;
    while (!c.done) {
      if (std::chrono::steady_clock::now() > end) return Status::Timeout;
      if (a.progress() == 0) std::this_thread::sleep_for(50us);
    }
    return c.result;
  }

  Component* comp_ = nullptr;
  std::unique_ptr<MemoryDomain> md_;
};

// A new connection over MC_TCP_MAX_PENDING_ACCEPTS closes the oldest one
// that has sent no hello; the rest stay open until MC_TCP_ACCEPT_TIMEOUT,
// which then closes them too. Before, such connections were kept forever.
TEST_F(TcpHostile, SilentConnectionsAreCappedOldestFirstAndTimedOut) {
  auto b = open_iface({{"MC_TCP_MAX_PENDING_ACCEPTS", "16"}, {"MC_TCP_ACCEPT_TIMEOUT", "3s"}});
  ASSERT_NE(b, nullptr);
  mc::test::LogCapture log;
  std::vector<int> fds;
  for (int i = 0; i < 40; ++i) {
    fds.push_back(connect_from("127.0.0.2", port_of(*b)));
    ASSERT_GE(fds.back(), 0);
  }
  for (int i = 0; i < 24; ++i) EXPECT_TRUE(closed_by_peer(fds[i], 20000)) << i;
  for (int i = 24; i < 40; ++i) EXPECT_FALSE(closed_by_peer(fds[i], 0)) << i;
  // The deadline closes those left.
  for (int i = 24; i < 40; ++i) EXPECT_TRUE(closed_by_peer(fds[i], 30000)) << i;
  for (int fd : fds) close(fd);
  size_t lines = 0;
  for (const std::string& line : log.lines()) {
    if (line.find("tcp: closing") == std::string::npos) continue;
    ++lines;
    EXPECT_NE(line.find("127.0.0.2:"), std::string::npos) << line;
  }
  EXPECT_GE(lines, 2u) << log.text();
  EXPECT_LE(lines, 20u) << "not rate-limited: " << log.text();
  // A good endpoint still works.
  auto a = open_iface();
  ASSERT_NE(a, nullptr);
  Target t;
  make_target(64 * 1024, &t);
  EXPECT_EQ(transfer(*a, *b, t, t.buf.size(), 1), Status::Ok);
}

// 300 silent peers (each one closed opens again) and peers that trickle a
// hello a byte at a time, while a good endpoint connects again and again
// and moves data, every byte checked.
TEST_F(TcpHostile, SilentAndTricklingPeersDoNotShutOutAGoodEndpoint) {
  auto b = open_iface({{"MC_TCP_ACCEPT_TIMEOUT", "2s"}});
  auto a = open_iface();
  ASSERT_TRUE(a && b);
  Target t;
  make_target(256 * 1024, &t);
  const uint16_t port = port_of(*b);
  std::atomic<bool> stop{false};
  std::atomic<bool> ramped{false};
  std::atomic<uint64_t> closed{0};
  std::thread attack([&] {
    struct Peer {
      int fd = -1;
      size_t sent = 0;
    };
    std::vector<Peer> peers(308);  // the last 8 trickle
    uint8_t hello[wire::kHeaderSize];
    wire::encode(wire::hello_header(wire::hello_identity(0x7f000002, 1), 1), hello);
    const char* sources[] = {"127.0.0.2", "127.0.0.3"};
    for (size_t i = 0; i < peers.size() && !stop; ++i)
      peers[i].fd = connect_from(sources[i % 2], port);
    ramped = true;
    for (uint64_t round = 0; !stop; ++round) {
      int reopened = 0;
      for (size_t i = 0; i < peers.size(); ++i) {
        Peer& p = peers[i];
        if (p.fd >= 0 && !closed_by_peer(p.fd, 0)) {
          // A byte of the hello every 200 ms: not whole before the deadline.
          if (i >= 300 && round % 20 == 0 && p.sent < sizeof(hello) - 1) {
            p.sent += send(p.fd, &hello[p.sent], 1, MSG_NOSIGNAL) == 1;
          }
          continue;
        }
        if (p.fd >= 0) {
          ++closed;
          close(p.fd);
          p.fd = -1;
        }
        if (reopened < 20) {
          p.fd = connect_from(sources[i % 2], port);
          p.sent = 0;
          ++reopened;
        }
      }
      std::this_thread::sleep_for(10ms);
    }
    for (Peer& p : peers) {
      if (p.fd >= 0) close(p.fd);
    }
  });
  int done = 0;
  for (; done < 10 || !ramped; ++done) {
    const Status s = transfer(*a, *b, t, t.buf.size() - done, 100 + done);
    if (s != Status::Ok) {
      ADD_FAILURE() << "transfer " << done << ": " << s;
      break;
    }
  }
  // Past the deadline the silent and the trickling peers are closed.
  const uint64_t before = closed.load();
  std::this_thread::sleep_for(3s);
  EXPECT_EQ(transfer(*a, *b, t, t.buf.size(), 7), Status::Ok);
  const uint64_t after = closed.load();
  stop = true;
  attack.join();
  EXPECT_GT(before, 0u) << "MC_TCP_MAX_PENDING_ACCEPTS closed no connection";
  EXPECT_GT(after, before) << "MC_TCP_ACCEPT_TIMEOUT closed no connection";
}

// Out of descriptors, the iface's accept pauses instead of spinning on a
// listening socket that stays readable and logs a few lines; once
// descriptors are back it accepts again and a good endpoint transfers.
// Before, its loop thread spun and logged every failed accept.
TEST_F(TcpHostile, OutOfDescriptorsAcceptPausesThenRecovers) {
  auto b = open_iface();
  auto a = open_iface();
  ASSERT_TRUE(a && b);
  Target t;
  make_target(64 * 1024, &t);
  const int waiting = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);  // made while we can
  ASSERT_GE(waiting, 0);
  size_t exhausted_lines = 0;
  std::chrono::microseconds cpu{};
  const std::chrono::milliseconds window = 2000ms;
  {
    mc::test::LogCapture log;
    mc::test::FdExhaustion exhaust;
    ASSERT_TRUE(exhaust.ok());
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port_of(*b));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(connect(waiting, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
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
  EXPECT_LT(cpu, window / 4) << "the accept loop spins";
  // The connection that waited in the backlog is served: a hello, then a ping.
  uint8_t frame[wire::kHeaderSize];
  wire::encode(wire::hello_header(wire::hello_identity(0x7f000001, 1), 1), frame);
  ASSERT_EQ(send(waiting, frame, sizeof(frame), MSG_NOSIGNAL), ssize_t(sizeof(frame)));
  wire::FrameHeader ping;
  ping.op = wire::Op::Ping;
  ping.req_id = 5;
  wire::encode(ping, frame);
  ASSERT_EQ(send(waiting, frame, sizeof(frame), MSG_NOSIGNAL), ssize_t(sizeof(frame)));
  size_t got = 0;
  while (got < sizeof(frame)) {
    pollfd p{waiting, POLLIN, 0};
    ASSERT_EQ(poll(&p, 1, 20000), 1) << "no pong";
    const ssize_t n = recv(waiting, frame + got, sizeof(frame) - got, 0);
    ASSERT_GT(n, 0);
    got += static_cast<size_t>(n);
  }
  auto pong = wire::decode({frame, sizeof(frame)}, {1u << 20, 1u << 30}, nullptr);
  ASSERT_TRUE(pong.ok());
  EXPECT_EQ(pong->op, wire::Op::Pong);
  EXPECT_EQ(pong->req_id, 5u);
  close(waiting);
  EXPECT_EQ(transfer(*a, *b, t, t.buf.size(), 3), Status::Ok);
}

}  // namespace
}  // namespace mc::uct::tcp
