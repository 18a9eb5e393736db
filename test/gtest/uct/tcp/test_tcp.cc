// SPDX-License-Identifier: Apache-2.0
// White-box tests of the tcp transport on 127.0.0.1: the wire codecs, raw
// sockets speaking (and breaking) the protocol, access checks, connection
// failures, striping over several connections, and two processes.
#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <random>
#include <thread>

#include "common/log_capture.h"
#include "common/proc_counts.h"
#include "ucs/async/event_loop.h"
#include "ucs/config/sources.h"
#include "ucs/sys/sys.h"
#include "uct/api/ep.h"
#include "uct/api/iface.h"
#include "uct/base/component_loader.h"
#include "uct/base/rkey_codec.h"
#include "uct/tcp/tcp_wire.h"

namespace mc::uct::tcp {
namespace {

using namespace std::chrono_literals;
using Env = std::map<std::string, std::string>;

// Bounds waits for what must happen; never a timing assertion.
constexpr auto kDeadline = 20s;

// --- helpers -------------------------------------------------------------

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

void fill(std::vector<uint8_t>& buf, uint32_t seed) {
  std::mt19937 rng(seed);
  for (auto& b : buf) b = static_cast<uint8_t>(rng());
}

bool progress_until(const std::function<bool()>& pred, std::initializer_list<Iface*> ifaces,
                    std::chrono::nanoseconds limit = kDeadline) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > end) return false;
    unsigned n = 0;
    for (Iface* i : ifaces) n += i->progress();
    if (n == 0) std::this_thread::sleep_for(50us);
  }
  return true;
}

// Waits for an operation's completion when it returned InProgress.
Status finish(Status s, Comp& c, std::initializer_list<Iface*> ifaces) {
  if (s != Status::InProgress) return s;
  if (!progress_until([&] { return c.done; }, ifaces)) return Status::Timeout;
  return c.result;
}

bool all_done(const std::vector<Comp>& comps) {
  return std::all_of(comps.begin(), comps.end(), [](const Comp& c) { return c.done; });
}

// Drives `iface` until every completion of `comps` came, then joins the
// thread that plays the raw peer; true when all came in time.
bool all_done_then_join(const std::vector<Comp>& comps, Iface& iface, std::thread& peer) {
  const bool all = progress_until([&] { return all_done(comps); }, {&iface});
  peer.join();
  return all;
}

Status flush_ep(Endpoint& ep, std::initializer_list<Iface*> ifaces) {
  Comp c;
  return finish(ep.flush(&c), c, ifaces);
}

// A registered buffer and its packed and unpacked rkey.
struct Region {
  std::vector<uint8_t> buf;
  std::unique_ptr<MemHandle> memh;
  std::vector<uint8_t> packed;
  std::unique_ptr<Rkey> rkey;
  uint64_t addr() const { return reinterpret_cast<uintptr_t>(buf.data()); }
};

// Packed rkey payload fields, at the end of the envelope (tcp_wire.h).
constexpr size_t kKeyOff = 8, kLenOff = 24, kAccessOff = 32;

void poke(std::vector<uint8_t>& packed, size_t field_off, uint64_t v, int n) {
  uint8_t* p = packed.data() + packed.size() - wire::kRkeyPayloadSize + field_off;
  for (int i = 0; i < n; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

// --- raw sockets -----------------------------------------------------------

// `bufsize` > 0 sets SO_SNDBUF and SO_RCVBUF, before the handshake as it must.
int raw_connect(uint16_t port, int bufsize = 0) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (bufsize > 0) {
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bufsize, sizeof(bufsize));
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bufsize, sizeof(bufsize));
  }
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

int raw_listen(uint16_t* port, int backlog = 16) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 || listen(fd, backlog) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    close(fd);
    return -1;
  }
  *port = ntohs(a.sin_port);
  return fd;
}

bool wait_readable(int fd, int timeout_ms) {
  pollfd p{fd, POLLIN, 0};
  return poll(&p, 1, timeout_ms) == 1;
}

// Reads exactly n bytes; false on EOF, error or 10 s without data.
bool read_full(int fd, void* buf, size_t n) {
  auto* p = static_cast<uint8_t*>(buf);
  while (n > 0) {
    if (!wait_readable(fd, 10000)) return false;
    const ssize_t r = read(fd, p, n);  // sockets and pipes
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

bool write_full(int fd, const void* buf, size_t n) {
  const auto* p = static_cast<const uint8_t*>(buf);
  while (n > 0) {
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == ENOTSOCK) w = write(fd, p, n);
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

bool send_header(int fd, const wire::FrameHeader& h) {
  uint8_t buf[wire::kHeaderSize];
  wire::encode(h, buf);
  return write_full(fd, buf, sizeof(buf));
}

Result<wire::FrameHeader> read_header(int fd) {
  uint8_t buf[wire::kHeaderSize];
  if (!read_full(fd, buf, sizeof(buf))) return Status::IoError;
  return wire::decode({buf, sizeof(buf)}, {1u << 20, 1u << 30}, nullptr);
}

// A raw initiator's Hello: connection index 1 (a striping connection, which
// gets no verdict and no adoption), from a port no iface listens on.
bool send_hello(int fd, uint32_t index = 1) {
  return send_header(fd, wire::hello_header(wire::hello_identity(0x7f000001, 1), index));
}

// A fake target's side of the handshake: reads the Hello of an accepted
// connection, answers a primary's with `verdict`; the connection's index.
Result<uint32_t> answer_hello(int fd, wire::Verdict verdict = wire::Verdict::Own) {
  auto h = read_header(fd);
  if (!h.ok() || h->op != wire::Op::Hello) return Status::BadData;
  if (h->get_length == 0) {
    wire::FrameHeader ack;
    ack.op = wire::Op::HelloAck;
    ack.req_id = static_cast<uint64_t>(verdict);
    if (!send_header(fd, ack)) return Status::IoError;
  }
  return h->get_length;
}

// Bytes waiting to be read on `fd` once `want` arrived or 2 s passed, and
// after a further 50 ms in which more could have come.
int readable_bytes(int fd, int want) {
  int n = 0;
  const auto end = std::chrono::steady_clock::now() + 2s;
  while (ioctl(fd, FIONREAD, &n) == 0 && n < want && std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(1ms);
  }
  std::this_thread::sleep_for(50ms);
  return ioctl(fd, FIONREAD, &n) == 0 ? n : -1;
}

// A fake target's answer to `count` get requests on `fd`: the reply header,
// then the bytes of `fake` asked for. False at a frame that is not a get
// request within `fake`.
bool answer_gets(int fd, const std::vector<uint8_t>& fake, uint64_t fake_addr, int count) {
  for (int i = 0; i < count; ++i) {
    auto h = read_header(fd);
    if (!h.ok() || h->op != wire::Op::GetReq || h->remote_addr < fake_addr ||
        h->remote_addr - fake_addr + h->get_length > fake.size()) {
      return false;
    }
    wire::FrameHeader reply;
    reply.op = wire::Op::GetResp;
    reply.req_id = h->req_id;
    reply.length = h->get_length;
    if (!send_header(fd, reply) ||
        !write_full(fd, fake.data() + (h->remote_addr - fake_addr), h->get_length)) {
      return false;
    }
  }
  return true;
}

// True when the peer closed `fd` (EOF or reset) within the deadline.
bool closed_by_peer(int fd) {
  uint8_t b;
  while (wait_readable(fd, 10000)) {
    const ssize_t r = recv(fd, &b, 1, 0);
    if (r <= 0) return true;
  }
  return false;
}

// --- fixture ---------------------------------------------------------------

class TcpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    comp_ = find_component("tcp");
    ASSERT_NE(comp_, nullptr) << "libmc_uct_tcp.so was not loaded";
    md_ = open_md({});
    ASSERT_NE(md_, nullptr);
  }

  std::unique_ptr<MemoryDomain> open_md(const Env& env) {
    auto sources = ucs::config::Sources::from(env, {});
    if (!sources.ok()) return nullptr;
    auto md = comp_->md_open("tcp", *sources);
    return md.ok() ? std::move(*md) : nullptr;
  }

  std::unique_ptr<Iface> open_iface(const Env& env = {}, ErrorHandler handler = {},
                                    ucs::EventLoop* async = nullptr) {
    auto sources = ucs::config::Sources::from(env, {});
    if (!sources.ok()) return nullptr;
    IfaceParams params;
    params.tl_name = "tcp";
    params.dev_name = "lo";
    params.err_handler = std::move(handler);
    params.sources = &*sources;
    params.async = async;
    auto iface = md_->iface_open(params);
    return iface.ok() ? std::move(*iface) : nullptr;
  }

  std::unique_ptr<Endpoint> connect(Iface& from, Iface& to) {
    auto ep = from.ep_create(to.device_address(), to.iface_address());
    return ep.ok() ? std::move(*ep) : nullptr;
  }

  // An endpoint to a port on 127.0.0.1 that is not a tcp iface.
  std::unique_ptr<Endpoint> connect_port(Iface& from, uint16_t port) {
    auto ep = from.ep_create(from.device_address(), wire::encode_iface_addr(port));
    return ep.ok() ? std::move(*ep) : nullptr;
  }

  // A raw listener, an endpoint of `from` to it and the accepted socket of
  // the endpoint's first connection (the iface has MC_TCP_CONNS=1).
  struct RawPeer {
    int lfd = -1;
    int fd = -1;
    std::unique_ptr<Endpoint> ep;
    ~RawPeer() {
      ep.reset();
      if (fd >= 0) close(fd);
      if (lfd >= 0) close(lfd);
    }
  };
  void raw_peer(Iface& from, RawPeer* p) {
    uint16_t port = 0;
    p->lfd = raw_listen(&port);
    ASSERT_GE(p->lfd, 0);
    p->ep = connect_port(from, port);
    ASSERT_NE(p->ep, nullptr);
    ASSERT_TRUE(wait_readable(p->lfd, 10000));
    p->fd = accept4(p->lfd, nullptr, nullptr, SOCK_CLOEXEC);
    ASSERT_GE(p->fd, 0);
  }

  // raw_peer(), then the fake target's Hello answer and one get of `fake`
  // served through progress(): the connection is up and nothing waits on it.
  void raw_peer_up(Iface& from, RawPeer* p, const Region& fake) {
    ASSERT_NO_FATAL_FAILURE(raw_peer(from, p));
    std::atomic<bool> served{false};
    std::thread target([&] {
      served = answer_hello(p->fd).ok() && answer_gets(p->fd, fake.buf, fake.addr(), 1);
    });
    std::vector<uint8_t> dst(4096);
    Iov iov{dst.data(), dst.size(), nullptr};
    Comp c;
    const Status s = finish(p->ep->get_zcopy(&iov, 1, fake.addr(), *fake.rkey, &c), c, {&from});
    target.join();
    ASSERT_TRUE(served);
    ASSERT_EQ(s, Status::Ok);
  }

  Region make_region(size_t size, unsigned access, uint32_t seed = 1) {
    Region r;
    r.buf.resize(size);
    fill(r.buf, seed);
    auto memh = md_->mem_reg(r.buf.data(), size, access);
    EXPECT_TRUE(memh.ok());
    if (!memh.ok()) return r;
    r.memh = std::move(*memh);
    if (access & kAccessRemote) {
      EXPECT_EQ(md_->mkey_pack(*r.memh, &r.packed), Status::Ok);
      r.rkey = unpack(r.packed);
    }
    return r;
  }

  std::unique_ptr<Rkey> unpack(const std::vector<uint8_t>& packed) {
    auto k = md_->rkey_unpack(packed);
    return k.ok() ? std::move(*k) : nullptr;
  }

  Component* comp_ = nullptr;
  std::unique_ptr<MemoryDomain> md_;
};

// --- wire codecs -------------------------------------------------------------

const wire::Limits kLimits{64 * 1024, 1u << 30};

std::vector<uint8_t> encoded(const wire::FrameHeader& h) {
  std::vector<uint8_t> buf(wire::kHeaderSize);
  wire::encode(h, buf.data());
  return buf;
}

Status decode_status(const std::vector<uint8_t>& buf) {
  std::string why;
  return wire::decode(buf, kLimits, &why).status();
}

TEST(TcpWire, HeaderRoundTripsEveryOp) {
  std::vector<wire::FrameHeader> frames(10);
  frames[0].op = wire::Op::Am;
  frames[0].am_id = 31;
  frames[0].length = 64 * 1024;
  frames[1].op = wire::Op::Put;
  frames[1].length = 12345;
  frames[1].remote_addr = 0x7fff12345678;
  frames[1].region_id = 42;
  frames[1].region_key = 0xdeadbeefcafef00dull;
  frames[1].req_id = 0xffffffffffffffffull;
  frames[2].op = wire::Op::PutAck;
  frames[2].status = Status::Rejected;
  frames[2].req_id = 7;
  frames[3].op = wire::Op::GetReq;
  frames[3].get_length = 1u << 30;
  frames[3].remote_addr = 1;
  frames[3].region_id = 2;
  frames[3].region_key = 3;
  frames[4].op = wire::Op::GetResp;
  frames[4].length = 99;
  frames[5].op = wire::Op::Ping;
  frames[5].req_id = 5;
  frames[6].op = wire::Op::Pong;
  frames[7] = wire::hello_header(wire::hello_identity(0x7f000001, 40000), 15);
  frames[8].op = wire::Op::HelloAck;
  frames[8].req_id = static_cast<uint64_t>(wire::Verdict::Shared);
  frames[9].op = wire::Op::Bye;
  for (const auto& h : frames) {
    std::string why;
    auto d = wire::decode(encoded(h), kLimits, &why);
    ASSERT_TRUE(d.ok()) << why;
    EXPECT_EQ(d->op, h.op);
    EXPECT_EQ(d->am_id, h.am_id);
    EXPECT_EQ(d->status, h.status);
    EXPECT_EQ(d->length, h.length);
    EXPECT_EQ(d->get_length, h.get_length);
    EXPECT_EQ(d->remote_addr, h.remote_addr);
    EXPECT_EQ(d->region_id, h.region_id);
    EXPECT_EQ(d->region_key, h.region_key);
    EXPECT_EQ(d->req_id, h.req_id);
  }
}

TEST(TcpWire, HeaderIsLittleEndianAt48Bytes) {
  wire::FrameHeader h;
  h.op = wire::Op::Put;
  h.length = 0x01020304;
  h.req_id = 0x1122334455667788ull;
  auto b = encoded(h);
  ASSERT_EQ(b.size(), 48u);
  EXPECT_EQ(b[0], 0x4d);  // 'M'
  EXPECT_EQ(b[1], 0x54);  // 'T'
  EXPECT_EQ(b[2], wire::kVersion);
  EXPECT_EQ(b[3], 2);
  EXPECT_EQ(b[8], 0x04);
  EXPECT_EQ(b[11], 0x01);
  EXPECT_EQ(b[40], 0x88);
  EXPECT_EQ(b[47], 0x11);
}

TEST(TcpWire, HeaderRejectsMalformedFields) {
  wire::FrameHeader put;
  put.op = wire::Op::Put;
  put.length = 10;
  auto good = encoded(put);
  ASSERT_EQ(decode_status(good), Status::Ok);
  for (size_t n = 0; n < wire::kHeaderSize; ++n) {
    EXPECT_EQ(decode_status({good.begin(), good.begin() + n}), Status::BadData) << n;
  }
  auto with = [&](size_t off, uint8_t v) {
    auto b = good;
    b[off] = v;
    return decode_status(b);
  };
  EXPECT_EQ(with(0, 0), Status::BadData);          // magic
  EXPECT_EQ(with(2, 1), Status::VersionMismatch);  // version 1: no handshake
  EXPECT_EQ(with(3, 0), Status::BadData);          // op 0
  EXPECT_EQ(with(3, 11), Status::BadData);         // op past the last
  EXPECT_EQ(with(4, 1), Status::BadData);          // flags
  EXPECT_EQ(with(5, 1), Status::BadData);          // am id on a put
  EXPECT_EQ(with(6, 0xfe), Status::BadData);       // status on a request
  EXPECT_EQ(with(7, 1), Status::BadData);          // reserved
  EXPECT_EQ(with(12, 1), Status::BadData);         // get length on a put
  EXPECT_EQ(with(11, 0x80), Status::BadData);      // put of 2 GiB > limit

  wire::FrameHeader am;
  am.op = wire::Op::Am;
  am.am_id = kAmIdMax;
  EXPECT_EQ(decode_status(encoded(am)), Status::BadData);
  am.am_id = 0;
  am.length = kLimits.max_am + 1;
  EXPECT_EQ(decode_status(encoded(am)), Status::BadData);
  am.length = 1;
  am.remote_addr = 8;
  EXPECT_EQ(decode_status(encoded(am)), Status::BadData);
  am.remote_addr = 0;
  am.req_id = 1;
  EXPECT_EQ(decode_status(encoded(am)), Status::BadData);

  wire::FrameHeader ack;
  ack.op = wire::Op::PutAck;
  ack.length = 1;
  EXPECT_EQ(decode_status(encoded(ack)), Status::BadData);  // payload on a control frame
  ack.length = 0;
  ack.status = Status::InProgress;
  EXPECT_EQ(decode_status(encoded(ack)), Status::BadData);  // not a reply status
  ack.status = static_cast<Status>(-1);
  EXPECT_EQ(decode_status(encoded(ack)), Status::BadData);
  ack.status = static_cast<Status>(-19);
  EXPECT_EQ(decode_status(encoded(ack)), Status::BadData);

  wire::FrameHeader resp;
  resp.op = wire::Op::GetResp;
  resp.status = Status::Rejected;
  resp.length = 4;
  EXPECT_EQ(decode_status(encoded(resp)), Status::BadData);  // data on a failed reply

  wire::FrameHeader get;
  get.op = wire::Op::GetReq;
  get.length = 4;
  EXPECT_EQ(decode_status(encoded(get)), Status::BadData);  // payload on a request

  // The handshake frames: `base` with one field changed by `change`.
  const auto changed = [](wire::FrameHeader base, const auto& change) {
    change(base);
    return decode_status(encoded(base));
  };
  const auto hello = wire::hello_header(wire::hello_identity(0x7f000001, 5000), 0);
  ASSERT_EQ(decode_status(encoded(hello)), Status::Ok);
  EXPECT_EQ(changed(hello, [](auto& h) { h.remote_addr = wire::hello_identity(0x7f000001, 0); }),
            Status::BadData);  // no port
  EXPECT_EQ(changed(hello, [](auto& h) { h.remote_addr = uint64_t{1} << 48; }),
            Status::BadData);  // past 48 bits
  EXPECT_EQ(changed(hello, [](auto& h) { h.get_length = wire::kMaxConnIndex + 1; }),
            Status::BadData);  // connection index
  EXPECT_EQ(changed(hello, [](auto& h) { h.req_id = 1; }), Status::BadData);
  EXPECT_EQ(changed(hello, [](auto& h) { h.region_id = 1; }), Status::BadData);
  wire::FrameHeader hello_ack;
  hello_ack.op = wire::Op::HelloAck;
  EXPECT_EQ(changed(hello_ack, [](auto& h) { h.req_id = 3; }), Status::BadData);  // verdict
  EXPECT_EQ(changed(hello_ack, [](auto& h) { h.remote_addr = 1; }), Status::BadData);
  wire::FrameHeader bye;
  bye.op = wire::Op::Bye;
  EXPECT_EQ(changed(bye, [](auto& h) { h.req_id = 1; }), Status::BadData);
  EXPECT_EQ(changed(bye, [](auto& h) { h.get_length = 1; }), Status::BadData);
}

TEST(TcpWire, GarbageNeverDecodesToSomethingElse) {
  // Whatever random bytes decode to must re-encode to the same bytes: the
  // decoder accepts no field it does not understand.
  std::mt19937_64 rng(7);
  size_t accepted = 0;
  for (int i = 0; i < 200000; ++i) {
    std::vector<uint8_t> b(wire::kHeaderSize);
    for (auto& x : b) x = static_cast<uint8_t>(rng());
    // Make some of them nearly valid so the deeper checks are reached.
    if (i % 2) {
      b[0] = 0x4d, b[1] = 0x54, b[2] = wire::kVersion, b[3] = 1 + (b[3] % 10);
      for (size_t k = 4; k < 48; ++k) b[k] = (rng() % 4 == 0) ? b[k] : 0;
    }
    auto d = wire::decode(b, kLimits, nullptr);
    if (!d.ok()) continue;
    ++accepted;
    EXPECT_EQ(encoded(*d), b);
  }
  EXPECT_GT(accepted, 0u);
}

TEST(TcpWire, RkeyPayloadIsChecked) {
  wire::RkeyPayload p{1, 2, 0x1000, 0x100, kAccessRemoteWrite};
  std::vector<uint8_t> b;
  wire::encode_rkey(p, &b);
  ASSERT_EQ(b.size(), wire::kRkeyPayloadSize);
  wire::RkeyPayload out;
  std::string why;
  EXPECT_TRUE(wire::decode_rkey(b, &out, &why));
  EXPECT_EQ(out.key, 2u);
  EXPECT_FALSE(wire::decode_rkey({b.data(), b.size() - 1}, &out, &why));
  auto longer = b;
  longer.push_back(0);
  EXPECT_FALSE(wire::decode_rkey(longer, &out, &why));
  for (auto [base, len, access] : {std::tuple<uint64_t, uint64_t, uint32_t>{0x1000, 0, 2},
                                   {~0ull - 4, 16, 2},
                                   {0x1000, 16, 0x100}}) {
    std::vector<uint8_t> bad;
    wire::encode_rkey({1, 2, base, len, access}, &bad);
    EXPECT_FALSE(wire::decode_rkey(bad, &out, &why)) << base << " " << len << " " << access;
  }
}

TEST(TcpWire, AddressesAreChecked) {
  auto dev = wire::encode_device_addr({htonl(INADDR_LOOPBACK), 5, 6});
  ASSERT_EQ(dev.size(), wire::kDeviceAddrSize);
  auto d = wire::decode_device_addr(dev);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->boot_id, 5u);
  EXPECT_EQ(wire::decode_device_addr({dev.data(), dev.size() - 1}).status(), Status::BadData);
  dev[0] = 6;
  EXPECT_EQ(wire::decode_device_addr(dev).status(), Status::Unsupported);
  EXPECT_EQ(wire::decode_iface_addr(wire::encode_iface_addr(0)).status(), Status::BadData);
  EXPECT_EQ(*wire::decode_iface_addr(wire::encode_iface_addr(4242)), 4242);
}

// --- md, resources, attributes ----------------------------------------------------

TEST_F(TcpTest, ResourcesIncludeLoopbackAndAttributesAreSane) {
  bool lo = false;
  for (const TlResource& r : md_->query_tl_resources()) {
    EXPECT_EQ(r.tl_name, "tcp");
    EXPECT_EQ(r.dev_type, DeviceType::Net);
    lo = lo || r.dev_name == "lo";
  }
  EXPECT_TRUE(lo);
  auto iface = open_iface({{"MC_TCP_SEG_SIZE", "16k"}});
  ASSERT_NE(iface, nullptr);
  const IfaceAttr attr = iface->query();
  EXPECT_TRUE(attr.cap & kCapErrHandlePeerFailure);
  EXPECT_TRUE(attr.cap & kCapPutZcopy);
  EXPECT_TRUE(attr.cap & kCapGetZcopy);
  EXPECT_TRUE(attr.cap & kCapAmZcopy);
  EXPECT_TRUE(attr.cap & kCapPending);
  EXPECT_EQ(attr.am.max_bcopy, 16u * 1024);
  EXPECT_GT(attr.put.max_zcopy, attr.put.max_bcopy);
  EXPECT_GE(attr.put.max_iov, 2u);
  EXPECT_GT(attr.latency.c, 0);
  EXPECT_GT(attr.bandwidth.total(), 1e9);  // loopback: several GB/s
  EXPECT_EQ(attr.device_addr_len, iface->device_address().size());
  EXPECT_EQ(attr.iface_addr_len, iface->iface_address().size());
}

TEST_F(TcpTest, BadConfigAndUnknownDeviceAreRefused) {
  EXPECT_EQ(open_md({{"MC_TCP_CONNS", "0"}}), nullptr);
  EXPECT_EQ(open_md({{"MC_TCP_PORT_RANGE", "9-3"}}), nullptr);
  IfaceParams params;
  params.tl_name = "tcp";
  params.dev_name = "no-such-device0";
  EXPECT_EQ(md_->iface_open(params).status(), Status::NoDevice);
}

TEST_F(TcpTest, RkeyUnpackChecksLengths) {
  Region r = make_region(4096, kAccessAll);
  ASSERT_NE(r.rkey, nullptr);
  EXPECT_EQ(md_->query().rkey_packed_size, r.packed.size());
  for (size_t n = 0; n < r.packed.size(); ++n) {
    EXPECT_EQ(md_->rkey_unpack({r.packed.data(), n}).status(), Status::InvalidParam) << n;
  }
  auto longer = r.packed;
  longer.push_back(0);
  EXPECT_EQ(md_->rkey_unpack(longer).status(), Status::InvalidParam);
  Region local = make_region(64, kAccessLocal);
  std::vector<uint8_t> out;
  EXPECT_EQ(md_->mkey_pack(*local.memh, &out), Status::InvalidParam);
}

TEST_F(TcpTest, ReachabilityGivesReasons) {
  auto iface = open_iface();
  ASSERT_NE(iface, nullptr);
  std::string why;
  EXPECT_TRUE(iface->is_reachable(iface->device_address(), iface->iface_address(), &why)) << why;
  EXPECT_FALSE(iface->is_reachable({}, iface->iface_address(), &why));
  EXPECT_NE(why, "");
  auto other_host = wire::encode_device_addr(
      {htonl(INADDR_LOOPBACK), ucs::boot_id_hash() + 1, ucs::host_identity().net_ns});
  EXPECT_FALSE(iface->is_reachable(other_host, iface->iface_address(), &why));
  EXPECT_NE(why.find("namespace"), std::string::npos) << why;
  auto other_ns = wire::encode_device_addr(
      {htonl(INADDR_LOOPBACK), ucs::boot_id_hash(), ucs::host_identity().net_ns + 1});
  EXPECT_FALSE(iface->is_reachable(other_ns, iface->iface_address(), &why));
  auto dev = iface->device_address();
  dev[0] = 6;  // another family
  EXPECT_FALSE(iface->is_reachable(dev, iface->iface_address(), &why));
  EXPECT_NE(why.find("family"), std::string::npos) << why;
  EXPECT_FALSE(iface->is_reachable(iface->device_address(), std::vector<uint8_t>{1}, &why));
  EXPECT_EQ(iface->ep_create(other_ns, iface->iface_address()).status(), Status::Unreachable);
}

// --- operations between two ifaces of this process ---------------------------------

struct Pair {
  std::unique_ptr<Iface> a, b;
  std::unique_ptr<Endpoint> ep;  // a -> b
};

TEST_F(TcpTest, EveryOperationMovesTheRightBytes) {
  Pair p;
  p.a = open_iface();
  p.b = open_iface();
  ASSERT_TRUE(p.a && p.b);
  p.ep = connect(*p.a, *p.b);
  ASSERT_NE(p.ep, nullptr);
  Iface* a = p.a.get();
  Region target = make_region(1 << 20, kAccessAll, 2);
  std::vector<uint8_t> src(1 << 20);
  fill(src, 3);

  // Only `a` progresses: the target serves puts and gets on its own thread.
  EXPECT_EQ(p.ep->put_short(src.data(), 100, target.addr() + 10, *target.rkey), Status::Ok);
  struct Pack {
    const uint8_t* p;
    size_t n;
  } pk{src.data() + 1000, 5000};
  auto packer = [](void* dest, void* arg) {
    auto* s = static_cast<Pack*>(arg);
    std::memcpy(dest, s->p, s->n);
    return s->n;
  };
  auto r = p.ep->put_bcopy(packer, &pk, target.addr() + 1000, *target.rkey);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, 5000u);
  Iov iov[3] = {{src.data() + 10000, 300, nullptr},
                {src.data() + 10300, 70000, nullptr},
                {src.data() + 80300, 200000, nullptr}};
  Comp put;
  EXPECT_EQ(finish(p.ep->put_zcopy(iov, 3, target.addr() + 10000, *target.rkey, &put), put, {a}),
            Status::Ok);
  EXPECT_EQ(flush_ep(*p.ep, {a}), Status::Ok);
  EXPECT_EQ(std::memcmp(target.buf.data() + 10, src.data(), 100), 0);
  EXPECT_EQ(std::memcmp(target.buf.data() + 1000, src.data() + 1000, 5000), 0);
  EXPECT_EQ(std::memcmp(target.buf.data() + 10000, src.data() + 10000, 270300), 0);

  std::vector<uint8_t> got(300000, 0);
  Iov giov[2] = {{got.data(), 1234, nullptr}, {got.data() + 1234, 200000, nullptr}};
  Comp get;
  EXPECT_EQ(finish(p.ep->get_zcopy(giov, 2, target.addr() + 500, *target.rkey, &get), get, {a}),
            Status::Ok);
  EXPECT_EQ(std::memcmp(got.data(), target.buf.data() + 500, 201234), 0);
  std::vector<uint8_t> small(777);
  Comp getb;
  auto unpacker = [](void* arg, const void* data, size_t n) {
    std::memcpy(static_cast<std::vector<uint8_t>*>(arg)->data(), data, n);
  };
  EXPECT_EQ(finish(p.ep->get_bcopy(unpacker, &small, small.size(), target.addr() + 3, *target.rkey,
                                   &getb),
                   getb, {a}),
            Status::Ok);
  EXPECT_EQ(std::memcmp(small.data(), target.buf.data() + 3, small.size()), 0);

  // Active messages arrive in order, in b's progress().
  std::vector<std::vector<uint8_t>> received;
  ASSERT_EQ(p.b->set_am_handler(3,
                                [&](const void* data, size_t n, unsigned) {
                                  auto* d = static_cast<const uint8_t*>(data);
                                  received.emplace_back(d, d + n);
                                  return Status::Ok;
                                }),
            Status::Ok);
  const uint64_t hdr = 0x0102030405060708ull;
  ASSERT_EQ(p.ep->am_short(3, hdr, src.data(), 50), Status::Ok);
  Pack am{src.data() + 7, 3000};
  ASSERT_TRUE(p.ep->am_bcopy(3, packer, &am).ok());
  const char zhdr[] = "header";
  Iov ziov[2] = {{src.data() + 100, 1000, nullptr}, {src.data() + 5000, 2000, nullptr}};
  Comp amz;
  EXPECT_EQ(finish(p.ep->am_zcopy(3, zhdr, sizeof(zhdr), ziov, 2, &amz), amz, {a}), Status::Ok);
  ASSERT_TRUE(progress_until([&] { return received.size() == 3; }, {p.a.get(), p.b.get()}));
  ASSERT_EQ(received[0].size(), 58u);
  uint64_t got_hdr = 0;
  for (int i = 0; i < 8; ++i) got_hdr |= uint64_t{received[0][i]} << (8 * i);
  EXPECT_EQ(got_hdr, hdr);
  EXPECT_EQ(std::memcmp(received[0].data() + 8, src.data(), 50), 0);
  EXPECT_EQ(received[1], std::vector<uint8_t>(src.begin() + 7, src.begin() + 3007));
  ASSERT_EQ(received[2].size(), sizeof(zhdr) + 3000);
  EXPECT_EQ(std::memcmp(received[2].data(), zhdr, sizeof(zhdr)), 0);
  EXPECT_EQ(std::memcmp(received[2].data() + sizeof(zhdr), src.data() + 100, 1000), 0);
  EXPECT_EQ(std::memcmp(received[2].data() + sizeof(zhdr) + 1000, src.data() + 5000, 2000), 0);
  Comp iflush;
  EXPECT_EQ(finish(p.a->flush(&iflush), iflush, {a}), Status::Ok);
}

// A stream of large puts makes the target read up to the next header only,
// so that each payload goes straight to its destination; small frames and
// the short tail of a payload between them must still land right.
TEST_F(TcpTest, AStreamOfLargeAndSmallPutsLandsByteForByte) {
  auto a = open_iface(), b = open_iface();
  ASSERT_TRUE(a && b);
  auto ep = connect(*a, *b);
  ASSERT_NE(ep, nullptr);
  // Around the direct path's 8 KiB threshold, a header alone, large ones.
  const size_t sizes[] = {65536, 8, 9000, 8191, 8192, 100, 200000, 48, 70001, 1, 65536, 65536};
  constexpr int kRounds = 6;
  size_t total = 0;
  for (size_t s : sizes) total += s;
  Region target = make_region(total * kRounds, kAccessAll, 6);
  std::vector<uint8_t> src(total * kRounds);
  fill(src, 7);
  std::vector<Comp> comps(std::size(sizes) * kRounds);
  size_t off = 0, k = 0;
  for (int r = 0; r < kRounds; ++r) {
    for (size_t s : sizes) {
      Iov iov{src.data() + off, s, nullptr};
      Status st;
      // Posted back to back; NoResource (the send queue is full) waits for room.
      while ((st = ep->put_zcopy(&iov, 1, target.addr() + off, *target.rkey, &comps[k])) ==
             Status::NoResource) {
        a->progress();
      }
      ASSERT_TRUE(st == Status::Ok || st == Status::InProgress) << ucs::status_string(st);
      if (st == Status::Ok) comps[k].done = true;
      off += s;
      ++k;
    }
  }
  ASSERT_TRUE(progress_until(
      [&] { return all_done(comps); },
      {a.get()}));
  for (const Comp& c : comps) EXPECT_EQ(c.result, Status::Ok);
  EXPECT_EQ(flush_ep(*ep, {a.get()}), Status::Ok);
  EXPECT_TRUE(target.buf == src);
}

TEST_F(TcpTest, ManyActiveMessagesKeepTheirOrder) {
  auto a = open_iface(), b = open_iface();
  ASSERT_TRUE(a && b);
  auto ep = connect(*a, *b);
  ASSERT_NE(ep, nullptr);
  std::vector<uint64_t> seen;
  ASSERT_EQ(b->set_am_handler(0,
                              [&](const void* data, size_t, unsigned) {
                                uint64_t v = 0;
                                std::memcpy(&v, data, 8);
                                seen.push_back(v);
                                return Status::Ok;
                              }),
            Status::Ok);
  const uint64_t n = 5000;
  for (uint64_t i = 0; i < n;) {
    const Status s = ep->am_short(0, i, nullptr, 0);
    if (s == Status::NoResource) {
      a->progress();
      continue;
    }
    ASSERT_EQ(s, Status::Ok);
    ++i;
  }
  ASSERT_TRUE(progress_until([&] { return seen.size() == n; }, {a.get(), b.get()}));
  for (uint64_t i = 0; i < n; ++i) ASSERT_EQ(seen[i], i);
}

TEST_F(TcpTest, LargePutAndGetAreStripedAndCorrect) {
  const Env env{{"MC_TCP_CONNS", "4"}, {"MC_TCP_STRIPE_THRESH", "16k"}};
  auto a = open_iface(env), b = open_iface(env);
  ASSERT_TRUE(a && b);
  auto ep = connect(*a, *b);
  ASSERT_NE(ep, nullptr);
  const size_t size = 24 << 20;
  Region target = make_region(size, kAccessAll, 4);
  std::vector<uint8_t> src(size);
  fill(src, 5);
  Iov iov[2] = {{src.data(), 1000001, nullptr}, {src.data() + 1000001, size - 1000001, nullptr}};
  Comp put;
  ASSERT_EQ(finish(ep->put_zcopy(iov, 2, target.addr(), *target.rkey, &put), put, {a.get()}),
            Status::Ok);
  EXPECT_TRUE(target.buf == src);
  std::vector<uint8_t> back(size);
  Iov giov{back.data(), size, nullptr};
  Comp get;
  ASSERT_EQ(finish(ep->get_zcopy(&giov, 1, target.addr(), *target.rkey, &get), get, {a.get()}),
            Status::Ok);
  EXPECT_TRUE(back == src);
  // A fence after striped work holds later operations until it is done.
  Comp put2;
  ASSERT_EQ(ep->put_zcopy(iov, 2, target.addr(), *target.rkey, &put2), Status::InProgress);
  EXPECT_EQ(ep->fence(), Status::Ok);
  EXPECT_EQ(ep->put_short(src.data(), 8, target.addr(), *target.rkey), Status::NoResource);
  ASSERT_TRUE(progress_until([&] { return put2.done; }, {a.get()}));
  EXPECT_EQ(ep->put_short(src.data(), 8, target.addr(), *target.rkey), Status::Ok);
  EXPECT_EQ(flush_ep(*ep, {a.get()}), Status::Ok);
}

TEST_F(TcpTest, NoResourceThenPendingResumes) {
  auto a = open_iface({{"MC_TCP_MAX_OUTSTANDING", "2"}}), b = open_iface();
  ASSERT_TRUE(a && b);
  auto ep = connect(*a, *b);
  ASSERT_NE(ep, nullptr);
  Region target = make_region(1 << 16, kAccessAll);
  std::vector<uint8_t> src(1 << 16, 7);
  Iov iov{src.data(), src.size(), nullptr};
  Comp c[3];
  ASSERT_EQ(ep->put_zcopy(&iov, 1, target.addr(), *target.rkey, &c[0]), Status::InProgress);
  ASSERT_EQ(ep->put_zcopy(&iov, 1, target.addr(), *target.rkey, &c[1]), Status::InProgress);
  ASSERT_EQ(ep->put_zcopy(&iov, 1, target.addr(), *target.rkey, &c[2]), Status::NoResource);
  struct Retry : PendingReq {
    Endpoint* ep;
    Iov* iov;
    Region* target;
    Comp* comp;
    int calls = 0;
  } retry;
  retry.ep = ep.get();
  retry.iov = &iov;
  retry.target = &target;
  retry.comp = &c[2];
  retry.func = [](PendingReq* r) {
    auto* self = static_cast<Retry*>(r);
    ++self->calls;
    const Status s =
        self->ep->put_zcopy(self->iov, 1, self->target->addr(), *self->target->rkey, self->comp);
    return s == Status::NoResource ? s : Status::Ok;
  };
  ASSERT_EQ(ep->pending_add(&retry), Status::Ok);
  ASSERT_TRUE(progress_until([&] { return c[2].done; }, {a.get()}));
  EXPECT_GE(retry.calls, 1);
  EXPECT_EQ(c[2].result, Status::Ok);
  EXPECT_EQ(ep->pending_add(&retry), Status::Busy);
  int purged = 0;
  ep->pending_purge([&](PendingReq*) { ++purged; });
  EXPECT_EQ(purged, 0);
}

// --- the target refuses what is not registered for it ------------------------------

TEST_F(TcpTest, RefusedAccessIsReportedAndTheConnectionKeepsWorking) {
  auto a = open_iface(), b = open_iface();
  ASSERT_TRUE(a && b);
  auto ep = connect(*a, *b);
  ASSERT_NE(ep, nullptr);
  Region rw = make_region(4096, kAccessAll, 8);
  Region ro = make_region(4096, kAccessLocal | kAccessRemoteRead, 9);
  Region wo = make_region(4096, kAccessLocal | kAccessRemoteWrite, 10);
  std::vector<uint8_t> src(8192, 0x5a);
  const std::vector<uint8_t> ro_before = ro.buf, rw_before = rw.buf;
  Iov iov{src.data(), 4096, nullptr};
  Iov dst{src.data(), 4096, nullptr};

  auto forged = [&](Region& r, size_t off, uint64_t v, int n) {
    auto packed = r.packed;
    poke(packed, off, v, n);
    return unpack(packed);
  };
  // Each forged key passes the initiator's own check and meets the target's.
  auto wrong_key = forged(rw, kKeyOff, 12345, 8);
  auto too_long = forged(rw, kLenOff, 8192, 8);
  auto ro_as_rw = forged(ro, kAccessOff, kAccessRemote, 4);
  auto wo_as_rw = forged(wo, kAccessOff, kAccessRemote, 4);
  ASSERT_TRUE(wrong_key && too_long && ro_as_rw && wo_as_rw);

  auto put = [&](const Rkey& k, uint64_t addr, Iov* v) {
    Comp c;
    return finish(ep->put_zcopy(v, 1, addr, k, &c), c, {a.get()});
  };
  auto get = [&](const Rkey& k, uint64_t addr) {
    Comp c;
    return finish(ep->get_zcopy(&dst, 1, addr, k, &c), c, {a.get()});
  };
  Iov big{src.data(), 8192, nullptr};
  EXPECT_EQ(put(*wrong_key, rw.addr(), &iov), Status::Rejected);
  EXPECT_EQ(put(*too_long, rw.addr(), &big), Status::Rejected);
  EXPECT_EQ(get(*too_long, rw.addr() + 4096), Status::Rejected);
  EXPECT_EQ(put(*ro_as_rw, ro.addr(), &iov), Status::Rejected);
  EXPECT_EQ(get(*wo_as_rw, wo.addr()), Status::Rejected);
  EXPECT_EQ(get(*wrong_key, rw.addr()), Status::Rejected);
  // The initiator's own check stops what the key itself forbids.
  EXPECT_EQ(ep->put_zcopy(&iov, 1, ro.addr(), *ro.rkey, nullptr), Status::InvalidParam);
  EXPECT_EQ(ep->put_zcopy(&iov, 1, rw.addr() + 1, *rw.rkey, nullptr), Status::InvalidParam);
  // A refused put without completion shows at the next flush.
  EXPECT_EQ(ep->put_short(src.data(), 16, rw.addr(), *wrong_key), Status::Ok);
  EXPECT_EQ(flush_ep(*ep, {a.get()}), Status::Rejected);
  EXPECT_EQ(ro.buf, ro_before);
  EXPECT_EQ(rw.buf, rw_before);

  // Still connected: good operations work.
  EXPECT_EQ(put(*rw.rkey, rw.addr(), &iov), Status::Ok);
  EXPECT_EQ(std::memcmp(rw.buf.data(), src.data(), 4096), 0);
  EXPECT_EQ(get(*ro.rkey, ro.addr()), Status::Ok);
  EXPECT_EQ(std::memcmp(src.data(), ro.buf.data(), 4096), 0);
  EXPECT_EQ(flush_ep(*ep, {a.get()}), Status::Ok);

  // A deregistered region is refused too.
  auto stale = unpack(rw.packed);
  rw.memh.reset();
  EXPECT_EQ(put(*stale, rw.addr(), &iov), Status::Rejected);
}

// A flood of refused puts (a region the target never had) costs a few log
// lines a second, the next one counting those held back; each put still
// gets its refusal. Before, every refused put logged a line.
TEST_F(TcpTest, RefusedPutsAreLoggedAtABoundedRate) {
  auto b = open_iface();
  ASSERT_NE(b, nullptr);
  Region target = make_region(4096, kAccessAll);
  const int fd = raw_connect(*wire::decode_iface_addr(b->iface_address()));
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(send_hello(fd));
  const auto refused_put = [&](uint64_t id) {
    wire::FrameHeader h;
    h.op = wire::Op::Put;
    h.length = 64;
    h.remote_addr = target.addr();
    h.region_id = 999999;
    h.req_id = id;
    std::vector<uint8_t> frame(wire::kHeaderSize + h.length, 7);
    wire::encode(h, frame.data());
    return frame;
  };
  const auto lines_with = [](mc::test::LogCapture& sink, const std::string& what) {
    size_t n = 0;
    for (const std::string& l : sink.lines()) n += l.find(what) != std::string::npos;
    return n;
  };
  mc::test::LogCapture sink;
  constexpr uint64_t kFlood = 300;
  std::vector<uint8_t> flood;
  for (uint64_t id = 1; id <= kFlood; ++id) {
    const std::vector<uint8_t> f = refused_put(id);
    flood.insert(flood.end(), f.begin(), f.end());
  }
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(write_full(fd, flood.data(), flood.size()));
  for (uint64_t id = 1; id <= kFlood; ++id) {
    auto ack = read_header(fd);
    ASSERT_TRUE(ack.ok()) << "ack " << id;
    EXPECT_EQ(ack->req_id, id);
    EXPECT_EQ(ack->status, Status::Rejected);
  }
  const auto seconds =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - start);
  // At most 5 lines in each second the flood took (and the one it began in).
  const size_t logged = lines_with(sink, "refused a put");
  EXPECT_GE(logged, 1u);
  EXPECT_LE(logged, 5u * static_cast<size_t>(seconds.count() + 2)) << sink.text();
  // Once the window has passed, the next refusal is logged with the count.
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  const std::vector<uint8_t> one = refused_put(kFlood + 1);
  ASSERT_TRUE(write_full(fd, one.data(), one.size()));
  ASSERT_TRUE(read_header(fd).ok());
  EXPECT_EQ(lines_with(sink, "more since the last report"), 1u) << sink.text();
  close(fd);
}

// A put that the target reads only after its sender hung up is dropped, not
// written: the sender will never see the ack, counts the put as failed, and
// may have sent it again on another connection, whose copy could otherwise
// be overwritten late (UCP re-issues the slices of a cut lane).
TEST_F(TcpTest, PutReadAfterItsSenderHungUpIsDropped) {
  auto b = open_iface();
  ASSERT_NE(b, nullptr);
  Region target = make_region(4096, kAccessAll);
  const std::vector<uint8_t> before = target.buf;
  wire::RkeyPayload key;
  ASSERT_TRUE(
      wire::decode_rkey({target.packed.data() + target.packed.size() - wire::kRkeyPayloadSize,
                         wire::kRkeyPayloadSize},
                        &key, nullptr));
  const int fd = raw_connect(*wire::decode_iface_addr(b->iface_address()));
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(send_hello(fd));
  const auto put_frame = [&](uint64_t id, size_t off, uint8_t value) {
    wire::FrameHeader h;
    h.op = wire::Op::Put;
    h.length = 1024;
    h.remote_addr = target.addr() + off;
    h.region_id = key.id;
    h.region_key = key.key;
    h.req_id = id;
    std::vector<uint8_t> frame(wire::kHeaderSize + h.length, value);
    wire::encode(h, frame.data());
    return frame;
  };
  // While the sender is there, the put lands and is acknowledged.
  const std::vector<uint8_t> first = put_frame(1, 0, 0x5a);
  ASSERT_TRUE(write_full(fd, first.data(), first.size()));
  auto ack = read_header(fd);
  ASSERT_TRUE(ack.ok());
  ASSERT_EQ(ack->status, Status::Ok);
  EXPECT_EQ(target.buf[0], 0x5a);
  EXPECT_EQ(target.buf[1023], 0x5a);
  // The second put and the FIN in one segment (corked until the shutdown),
  // so the target sees the hang-up before it reads the put.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the target back in its wait
  const int one = 1;
  ASSERT_EQ(setsockopt(fd, IPPROTO_TCP, TCP_CORK, &one, sizeof(one)), 0);
  const std::vector<uint8_t> second = put_frame(2, 1024, 0xa5);
  ASSERT_TRUE(write_full(fd, second.data(), second.size()));
  ASSERT_EQ(shutdown(fd, SHUT_WR), 0);
  // Refused if an ack comes at all, and the target closes the connection.
  if (wait_readable(fd, 10000)) {
    auto late = read_header(fd);
    if (late.ok()) {
      EXPECT_NE(late->status, Status::Ok);
    }
  }
  EXPECT_TRUE(closed_by_peer(fd));
  close(fd);
  EXPECT_TRUE(std::equal(target.buf.begin() + 1024, target.buf.end(), before.begin() + 1024))
      << "the put read after the hang-up was written";
}

TEST_F(TcpTest, MalformedFramesCloseOnlyTheirConnection) {
  auto b = open_iface();
  ASSERT_NE(b, nullptr);
  const uint16_t port = *wire::decode_iface_addr(b->iface_address());
  Region target = make_region(4096, kAccessAll);

  std::mt19937 rng(11);
  for (int round = 0; round < 8; ++round) {
    const int fd = raw_connect(port);
    ASSERT_GE(fd, 0);
    std::vector<uint8_t> junk(wire::kHeaderSize + rng() % 100);
    for (auto& x : junk) x = static_cast<uint8_t>(rng());
    if (round % 2) {  // a valid-looking header with one bad field
      wire::FrameHeader h;
      h.op = wire::Op::Put;
      h.length = 16;
      wire::encode(h, junk.data());
      junk[4 + round % 4] = 0x77;
    }
    ASSERT_TRUE(write_full(fd, junk.data(), junk.size()));
    EXPECT_TRUE(closed_by_peer(fd)) << "round " << round;
    close(fd);
  }
  // A frame cut short by its sender.
  {
    const int fd = raw_connect(port);
    wire::FrameHeader h;
    h.op = wire::Op::Put;
    h.length = 4096;
    h.remote_addr = target.addr();
    ASSERT_TRUE(send_header(fd, h));
    ASSERT_TRUE(write_full(fd, "abc", 3));
    close(fd);
  }
  // A well-formed request before the Hello.
  {
    const int fd = raw_connect(port);
    ASSERT_GE(fd, 0);
    wire::FrameHeader ping;
    ping.op = wire::Op::Ping;
    ping.req_id = 1;
    ASSERT_TRUE(send_header(fd, ping));
    EXPECT_TRUE(closed_by_peer(fd));
    close(fd);
  }
  // Handshake frames out of place (a second Hello, a HelloAck sent to the
  // target), and a Bye on a connection no endpoint of the target uses,
  // which ends it.
  for (int round = 0; round < 3; ++round) {
    const int fd = raw_connect(port);
    ASSERT_GE(fd, 0);
    ASSERT_TRUE(send_hello(fd));
    wire::FrameHeader h;
    if (round == 0) h = wire::hello_header(wire::hello_identity(0x7f000001, 1), 1);
    if (round == 1) h.op = wire::Op::HelloAck;
    if (round == 2) h.op = wire::Op::Bye;
    ASSERT_TRUE(send_header(fd, h));
    EXPECT_TRUE(closed_by_peer(fd)) << "round " << round;
    close(fd);
  }
  // A raw peer speaking the protocol: refused put, then ping, still answered.
  {
    const int fd = raw_connect(port);
    ASSERT_GE(fd, 0);
    ASSERT_TRUE(send_hello(fd));
    wire::FrameHeader h;
    h.op = wire::Op::Put;
    h.length = 64;
    h.remote_addr = target.addr();
    h.region_id = 999999;
    h.req_id = 77;
    ASSERT_TRUE(send_header(fd, h));
    std::vector<uint8_t> payload(64, 1);
    ASSERT_TRUE(write_full(fd, payload.data(), payload.size()));
    auto ack = read_header(fd);
    ASSERT_TRUE(ack.ok());
    EXPECT_EQ(ack->op, wire::Op::PutAck);
    EXPECT_EQ(ack->req_id, 77u);
    EXPECT_EQ(ack->status, Status::Rejected);
    wire::FrameHeader ping;
    ping.op = wire::Op::Ping;
    ping.req_id = 78;
    ASSERT_TRUE(send_header(fd, ping));
    auto pong = read_header(fd);
    ASSERT_TRUE(pong.ok());
    EXPECT_EQ(pong->op, wire::Op::Pong);
    // A reply frame is not something a target accepts.
    ASSERT_TRUE(send_header(fd, *pong));
    EXPECT_TRUE(closed_by_peer(fd));
    close(fd);
  }
  // The iface still serves a good endpoint.
  auto a = open_iface();
  ASSERT_NE(a, nullptr);
  auto ep = connect(*a, *b);
  ASSERT_NE(ep, nullptr);
  std::vector<uint8_t> src(4096, 0x33);
  Iov iov{src.data(), src.size(), nullptr};
  Comp c;
  EXPECT_EQ(finish(ep->put_zcopy(&iov, 1, target.addr(), *target.rkey, &c), c, {a.get()}),
            Status::Ok);
  EXPECT_EQ(target.buf, src);
}

// --- several connections, seen from a fake target ------------------------------------

TEST_F(TcpTest, EveryConnectionIsOpenedAndLargeOperationsUseThemAll) {
  constexpr int kConns = 3;
  auto a = open_iface({{"MC_TCP_CONNS", "3"}, {"MC_TCP_STRIPE_THRESH", "64k"}});
  ASSERT_NE(a, nullptr);
  uint16_t port = 0;
  const int lfd = raw_listen(&port);
  ASSERT_GE(lfd, 0);
  // Memory the fake target serves; a real registration gives a valid rkey.
  Region fake = make_region(1 << 20, kAccessAll, 12);
  auto ep = connect_port(*a, port);
  ASSERT_NE(ep, nullptr);
  // Each connection starts with a Hello naming its index; the primary's
  // gets its verdict.
  std::vector<int> fds(kConns, -1);
  for (int i = 0; i < kConns; ++i) {
    ASSERT_TRUE(wait_readable(lfd, 10000)) << "only " << i << " connections were opened";
    const int fd = accept4(lfd, nullptr, nullptr, SOCK_CLOEXEC);
    ASSERT_GE(fd, 0);
    auto index = answer_hello(fd);
    ASSERT_TRUE(index.ok() && *index < kConns && fds[*index] < 0);
    fds[*index] = fd;
  }

  // Serves one frame on each connection, in order; records what came where.
  std::vector<wire::FrameHeader> seen(kConns);
  std::atomic<bool> served_ok{true};
  auto serve = [&] {
    for (int i = 0; i < kConns; ++i) {
      auto h = read_header(fds[i]);
      if (!h.ok() || h->remote_addr < fake.addr()) {
        served_ok = false;
        return;
      }
      seen[i] = *h;
      const size_t off = h->remote_addr - fake.addr();
      wire::FrameHeader reply;
      reply.req_id = h->req_id;
      if (h->op == wire::Op::Put && off + h->length <= fake.buf.size()) {
        if (!read_full(fds[i], fake.buf.data() + off, h->length)) served_ok = false;
        reply.op = wire::Op::PutAck;
        send_header(fds[i], reply);
      } else if (h->op == wire::Op::GetReq && off + h->get_length <= fake.buf.size()) {
        reply.op = wire::Op::GetResp;
        reply.length = h->get_length;
        send_header(fds[i], reply);
        write_full(fds[i], fake.buf.data() + off, h->get_length);
      } else {
        served_ok = false;
      }
    }
  };

  std::vector<uint8_t> src(1 << 20);
  fill(src, 13);
  Iov iov{src.data(), src.size(), nullptr};
  Comp put;
  ASSERT_EQ(ep->put_zcopy(&iov, 1, fake.addr(), *fake.rkey, &put), Status::InProgress);
  std::thread server(serve);
  const bool done = progress_until([&] { return put.done; }, {a.get()});
  server.join();
  ASSERT_TRUE(done && served_ok);
  EXPECT_EQ(put.result, Status::Ok);
  size_t total = 0;
  for (int i = 0; i < kConns; ++i) {
    EXPECT_EQ(seen[i].op, wire::Op::Put) << "connection " << i;
    EXPECT_GT(seen[i].length, 0u);
    total += seen[i].length;
  }
  EXPECT_EQ(total, src.size());
  EXPECT_EQ(fake.buf, src);

  fill(fake.buf, 14);
  std::vector<uint8_t> back(1 << 20);
  Iov giov{back.data(), back.size(), nullptr};
  Comp get;
  ASSERT_EQ(ep->get_zcopy(&giov, 1, fake.addr(), *fake.rkey, &get), Status::InProgress);
  std::thread server2(serve);
  const bool got = progress_until([&] { return get.done; }, {a.get()});
  server2.join();
  ASSERT_TRUE(got && served_ok);
  EXPECT_EQ(get.result, Status::Ok);
  for (int i = 0; i < kConns; ++i) EXPECT_EQ(seen[i].op, wire::Op::GetReq) << i;
  EXPECT_EQ(back, fake.buf);

  // A small put goes on the first connection only.
  ASSERT_EQ(ep->put_short(src.data(), 64, fake.addr(), *fake.rkey), Status::Ok);
  ASSERT_TRUE(wait_readable(fds[0], 10000));
  auto h = read_header(fds[0]);
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->length, 64u);
  for (int i = 1; i < kConns; ++i) EXPECT_FALSE(wait_readable(fds[i], 0));

  // The fake target dies: the endpoint fails, the put completes with an error.
  for (int fd : fds) close(fd);
  close(lfd);
  EXPECT_NE(flush_ep(*ep, {a.get()}), Status::Ok);
}

// --- connection sharing ---------------------------------------------------------

struct Errors {
  std::vector<std::pair<Endpoint*, Status>> seen;
  ErrorHandler handler() {
    return [this](Endpoint* ep, Status s) { seen.emplace_back(ep, s); };
  }
};


// Established TCP connections whose local port is one of `ports`, i.e. the
// connections those listening ifaces accepted (/proc/net/tcp: the fourth
// column is the state, 01 = ESTABLISHED; ports are hexadecimal).
size_t accepted_conns(std::initializer_list<uint16_t> ports) {
  std::ifstream f("/proc/net/tcp");
  std::string line;
  std::getline(f, line);
  size_t n = 0;
  while (std::getline(f, line)) {
    std::istringstream fields(line);
    std::string slot, local, remote, state;
    fields >> slot >> local >> remote >> state;
    if (state != "01") continue;
    const auto port = static_cast<uint16_t>(std::stoul(local.substr(local.find(':') + 1), 0, 16));
    for (uint16_t p : ports) n += port == p;
  }
  return n;
}

uint16_t port_of(Iface& iface) { return *wire::decode_iface_addr(iface.iface_address()); }

// Records the 8-byte values of active messages `id`.
void record_ams(Iface& iface, uint8_t id, std::vector<uint64_t>* seen) {
  ASSERT_EQ(iface.set_am_handler(id,
                                 [seen](const void* data, size_t, unsigned) {
                                   uint64_t v;
                                   std::memcpy(&v, data, 8);
                                   seen->push_back(v);
                                   return Status::Ok;
                                 }),
            Status::Ok);
}

TEST_F(TcpTest, EndpointsToEachOtherShareOneConnection) {
  const Env one{{"MC_TCP_CONNS", "1"}};
  auto a = open_iface(one), b = open_iface(one);
  ASSERT_TRUE(a && b);
  // Created at once, before either side progresses: the two primaries
  // cross and one of them is kept for both.
  auto ab = connect(*a, *b);
  auto ba = connect(*b, *a);
  ASSERT_TRUE(ab && ba);
  std::vector<uint64_t> at_a, at_b;
  record_ams(*a, 2, &at_a);
  record_ams(*b, 2, &at_b);
  for (uint64_t i = 0; i < 50; ++i) {  // ping-pong
    ASSERT_EQ(ab->am_short(2, i, nullptr, 0), Status::Ok);
    ASSERT_TRUE(progress_until([&] { return at_b.size() == i + 1; }, {a.get(), b.get()}));
    ASSERT_EQ(ba->am_short(2, i, nullptr, 0), Status::Ok);
    ASSERT_TRUE(progress_until([&] { return at_a.size() == i + 1; }, {a.get(), b.get()}));
    ASSERT_EQ(at_b[i], i);
    ASSERT_EQ(at_a[i], i);
  }
  Region ra = make_region(4096, kAccessAll, 21), rb = make_region(4096, kAccessAll, 22);
  std::vector<uint8_t> src(4096);
  fill(src, 23);
  Iov iov{src.data(), src.size(), nullptr};
  Comp c1, c2;
  EXPECT_EQ(finish(ab->put_zcopy(&iov, 1, rb.addr(), *rb.rkey, &c1), c1, {a.get(), b.get()}),
            Status::Ok);
  EXPECT_EQ(finish(ba->put_zcopy(&iov, 1, ra.addr(), *ra.rkey, &c2), c2, {a.get(), b.get()}),
            Status::Ok);
  EXPECT_EQ(ra.buf, src);
  EXPECT_EQ(rb.buf, src);
  EXPECT_EQ(ab->connect_status(), Status::Ok);
  EXPECT_EQ(ba->connect_status(), Status::Ok);
  // The primary that lost was closed: one connection carries both ways.
  EXPECT_TRUE(progress_until([&] { return accepted_conns({port_of(*a), port_of(*b)}) == 1; },
                             {a.get(), b.get()}))
      << accepted_conns({port_of(*a), port_of(*b)}) << " connections";
}

TEST_F(TcpTest, ALaterEndpointAdoptsThePeersPrimaryAndOutlivesItsOwner) {
  const Env env{{"MC_TCP_CONNS", "2"}, {"MC_TCP_STRIPE_THRESH", "64k"}};
  auto a = open_iface(env), b = open_iface(env);
  ASSERT_TRUE(a && b);
  const uint16_t pa = port_of(*a), pb = port_of(*b);
  auto ab = connect(*a, *b);
  ASSERT_NE(ab, nullptr);
  ASSERT_TRUE(progress_until([&] { return ab->connect_status() == Status::Ok; }, {a.get()}));
  // b's endpoint takes a's primary and opens only its second connection.
  auto ba = connect(*b, *a);
  ASSERT_NE(ba, nullptr);
  ASSERT_TRUE(progress_until([&] { return ba->connect_status() == Status::Ok; }, {b.get()}));
  EXPECT_TRUE(progress_until([&] { return accepted_conns({pa, pb}) == 3; }, {a.get(), b.get()}))
      << accepted_conns({pa, pb}) << " connections, 3 expected (2 + 1)";

  std::vector<uint64_t> at_a, at_b;
  record_ams(*a, 5, &at_a);
  record_ams(*b, 5, &at_b);
  Region ra = make_region(1 << 20, kAccessAll, 31), rb = make_region(1 << 20, kAccessAll, 32);
  std::vector<uint8_t> src(1 << 20);
  fill(src, 33);
  Iov iov{src.data(), src.size(), nullptr};
  for (auto* pair : {&ab, &ba}) {  // striped puts and an active message each way
    Region& r = pair == &ab ? rb : ra;
    Comp c;
    EXPECT_EQ(finish((*pair)->put_zcopy(&iov, 1, r.addr(), *r.rkey, &c), c, {a.get(), b.get()}),
              Status::Ok);
    EXPECT_EQ(r.buf, src);
    ASSERT_EQ((*pair)->am_short(5, 7, nullptr, 0), Status::Ok);
  }
  ASSERT_TRUE(progress_until([&] { return at_a.size() == 1 && at_b.size() == 1; },
                             {a.get(), b.get()}));

  // a's endpoint goes; the connection it opened stays for b's.
  ab.reset();
  fill(src, 34);
  for (uint64_t i = 0; i < 20; ++i) ASSERT_EQ(ba->am_short(5, 100 + i, nullptr, 0), Status::Ok);
  Comp c;
  EXPECT_EQ(finish(ba->put_zcopy(&iov, 1, ra.addr(), *ra.rkey, &c), c, {a.get(), b.get()}),
            Status::Ok);
  EXPECT_EQ(ra.buf, src);
  ASSERT_TRUE(progress_until([&] { return at_a.size() == 21; }, {a.get(), b.get()}));
  for (uint64_t i = 0; i < 20; ++i) EXPECT_EQ(at_a[1 + i], 100 + i);
  EXPECT_EQ(flush_ep(*ba, {a.get(), b.get()}), Status::Ok);
  // b's goes too: nothing is left open.
  ba.reset();
  EXPECT_TRUE(progress_until([&] { return accepted_conns({pa, pb}) == 0; }, {a.get(), b.get()}))
      << accepted_conns({pa, pb}) << " connections left";
}

TEST_F(TcpTest, TheTargetsVerdictDecidesWhereTheEndpointSends) {
  for (auto verdict : {wire::Verdict::Own, wire::Verdict::Yield, wire::Verdict::Shared}) {
    SCOPED_TRACE("verdict " + std::to_string(static_cast<int>(verdict)));
    Errors errors;
    auto a = open_iface({{"MC_TCP_CONNS", "1"}}, errors.handler());
    ASSERT_NE(a, nullptr);
    std::vector<uint64_t> at_a;
    record_ams(*a, 4, &at_a);
    Region fake = make_region(4096, kAccessAll, 41);
    RawPeer peer;
    ASSERT_NO_FATAL_FAILURE(raw_peer(*a, &peer));
    const int fd = peer.fd;
    auto& ep = peer.ep;
    // Nothing but the Hello before the verdict.
    ASSERT_EQ(ep->put_short(fake.buf.data(), 64, fake.addr(), *fake.rkey), Status::Ok);
    auto index = read_header(fd);
    ASSERT_TRUE(index.ok());
    ASSERT_EQ(index->op, wire::Op::Hello);
    EXPECT_EQ(index->remote_addr, wire::hello_identity(0x7f000001, port_of(*a)));
    EXPECT_FALSE(wait_readable(fd, 20));
    wire::FrameHeader ack;
    ack.op = wire::Op::HelloAck;
    ack.req_id = static_cast<uint64_t>(verdict);
    ASSERT_TRUE(send_header(fd, ack));
    // Yield offers a connection that never comes: the endpoint sends on its
    // own after a short wait.
    auto put = read_header(fd);
    ASSERT_TRUE(put.ok());
    ASSERT_EQ(put->op, wire::Op::Put);
    std::vector<uint8_t> payload(put->length);
    ASSERT_TRUE(read_full(fd, payload.data(), payload.size()));
    wire::FrameHeader put_ack;
    put_ack.op = wire::Op::PutAck;
    put_ack.req_id = put->req_id;
    ASSERT_TRUE(send_header(fd, put_ack));
    EXPECT_EQ(flush_ep(*ep, {a.get()}), Status::Ok);
    // The peer may send requests on the endpoint's primary once it gave its
    // verdict (it adopted it, now or for a later endpoint of its own).
    wire::FrameHeader am;
    am.op = wire::Op::Am;
    am.am_id = 4;
    am.length = 8;
    const uint64_t value = 0x5eed;
    ASSERT_TRUE(send_header(fd, am) && write_full(fd, &value, 8));
    ASSERT_TRUE(progress_until([&] { return at_a.size() == 1; }, {a.get()}));
    EXPECT_EQ(at_a[0], value);
    EXPECT_TRUE(errors.seen.empty());
  }
}

TEST_F(TcpTest, ARequestBeforeTheVerdictIsAProtocolError) {
  Errors errors;
  auto a = open_iface({{"MC_TCP_CONNS", "1"}}, errors.handler());
  ASSERT_NE(a, nullptr);
  RawPeer peer;
  ASSERT_NO_FATAL_FAILURE(raw_peer(*a, &peer));
  const int fd = peer.fd;
  auto hello = read_header(fd);
  ASSERT_TRUE(hello.ok());
  ASSERT_EQ(hello->op, wire::Op::Hello);
  wire::FrameHeader ping;
  ping.op = wire::Op::Ping;
  ping.req_id = 1;
  ASSERT_TRUE(send_header(fd, ping));
  ASSERT_TRUE(progress_until([&] { return errors.seen.size() == 1; }, {a.get()}));
  EXPECT_EQ(errors.seen[0].second, Status::BadData);
  EXPECT_TRUE(closed_by_peer(fd));
}

// --- failures ------------------------------------------------------------------

TEST_F(TcpTest, ConnectingToAClosedPortFailsAndCallsTheHandler) {
  Errors errors;
  auto a = open_iface({{"MC_TCP_CONN_TIMEOUT", "2s"}}, errors.handler());
  ASSERT_NE(a, nullptr);
  auto port = ucs::find_free_tcp_port();
  ASSERT_TRUE(port.ok());
  auto ep = connect_port(*a, *port);
  ASSERT_NE(ep, nullptr);  // connects in the background
  Region target = make_region(4096, kAccessAll);
  std::vector<uint8_t> src(4096);
  Iov iov{src.data(), src.size(), nullptr};
  Comp c;
  const Status s = ep->put_zcopy(&iov, 1, target.addr(), *target.rkey, &c);
  ASSERT_TRUE(progress_until(
      [&] { return (s != Status::InProgress || c.done) && errors.seen.size() == 1; }, {a.get()}));
  EXPECT_TRUE(is_error(s == Status::InProgress ? c.result : s));
  EXPECT_EQ(errors.seen[0].first, ep.get());
  EXPECT_TRUE(is_error(errors.seen[0].second));
  EXPECT_TRUE(is_error(ep->put_zcopy(&iov, 1, target.addr(), *target.rkey, &c)));
  EXPECT_TRUE(is_error(ep->flush(nullptr)));
  a->progress();
  EXPECT_EQ(errors.seen.size(), 1u);
}

TEST_F(TcpTest, ConnectingToAPeerThatNeverAnswersTimesOut) {
  // A listener whose accept queue is full drops new SYNs: connect hangs.
  uint16_t port = 0;
  const int lfd = raw_listen(&port, 0);
  ASSERT_GE(lfd, 0);
  std::vector<int> fillers;
  for (int i = 0; i < 2; ++i) {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sa.sin_port = htons(port);
    (void)::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa));
    fillers.push_back(fd);
  }
  std::this_thread::sleep_for(100ms);  // lets the fillers occupy the queue
  Errors errors;
  auto a = open_iface({{"MC_TCP_CONN_TIMEOUT", "300ms"}}, errors.handler());
  ASSERT_NE(a, nullptr);
  auto ep = connect_port(*a, port);
  ASSERT_NE(ep, nullptr);
  ASSERT_TRUE(progress_until([&] { return errors.seen.size() == 1; }, {a.get()}));
  EXPECT_EQ(errors.seen[0].second, Status::Timeout);
  for (int fd : fillers) close(fd);
  close(lfd);
}

TEST_F(TcpTest, DestroyingWithWorkOutstandingCancelsIt) {
  auto a = open_iface();
  ASSERT_NE(a, nullptr);
  uint16_t port = 0;
  const int lfd = raw_listen(&port);  // accepts (in the backlog), never answers
  ASSERT_GE(lfd, 0);
  Region target = make_region(1 << 16, kAccessAll);
  std::vector<uint8_t> buf(1 << 16);
  Iov iov{buf.data(), buf.size(), nullptr};

  auto ep = connect_port(*a, port);
  ASSERT_NE(ep, nullptr);
  Comp put, get, iflush;
  ASSERT_EQ(ep->put_zcopy(&iov, 1, target.addr(), *target.rkey, &put), Status::InProgress);
  ASSERT_EQ(ep->get_zcopy(&iov, 1, target.addr(), *target.rkey, &get), Status::InProgress);
  ASSERT_EQ(a->flush(&iflush), Status::InProgress);
  a->progress();
  ep.reset();
  EXPECT_TRUE(put.done && get.done && iflush.done);
  EXPECT_EQ(put.result, Status::Canceled);
  EXPECT_EQ(get.result, Status::Canceled);
  EXPECT_EQ(iflush.result, Status::Canceled);

  // The iface goes first: its endpoints' work is canceled, they become inert.
  ep = connect_port(*a, port);
  ASSERT_NE(ep, nullptr);
  Comp put2;
  ASSERT_EQ(ep->put_zcopy(&iov, 1, target.addr(), *target.rkey, &put2), Status::InProgress);
  a.reset();
  EXPECT_TRUE(put2.done);
  EXPECT_EQ(put2.result, Status::Canceled);
  EXPECT_EQ(ep->put_zcopy(&iov, 1, target.addr(), *target.rkey, &put2), Status::Canceled);
  EXPECT_EQ(ep->flush(nullptr), Status::Canceled);
  ep.reset();
  close(lfd);
}

TEST_F(TcpTest, NoFdOrThreadIsLeftBehind) {
  auto cycle = [&] {
    auto a = open_iface(), b = open_iface();
    ASSERT_TRUE(a && b);
    auto ep = connect(*a, *b);
    auto back = connect(*b, *a);
    ASSERT_TRUE(ep && back);
    Region target = make_region(1 << 20, kAccessAll);
    std::vector<uint8_t> buf(1 << 20);
    Iov iov{buf.data(), buf.size(), nullptr};
    Comp c;
    EXPECT_EQ(finish(ep->put_zcopy(&iov, 1, target.addr(), *target.rkey, &c), c, {a.get()}),
              Status::Ok);
    // Left in flight on purpose, and b closes before its endpoint.
    Comp c2;
    (void)ep->get_zcopy(&iov, 1, target.addr(), *target.rkey, &c2);
    b.reset();
    back.reset();
    ep.reset();
  };
  cycle();
  const mc::test::ProcCounts before = mc::test::quiet_proc_counts();
  for (int i = 0; i < 3; ++i) cycle();
  const mc::test::ProcCounts after = mc::test::settled_proc_counts(before);
  EXPECT_EQ(after.fds, before.fds);
  EXPECT_EQ(after.threads, before.threads);
}

TEST_F(TcpTest, WorksOnTheCallersEventLoop) {
  for (bool threaded : {true, false}) {
    auto loop = ucs::EventLoop::create();
    ASSERT_TRUE(loop.ok());
    if (threaded) {
      ASSERT_EQ((*loop)->start(), Status::Ok);
    }
    IfaceParams params;
    params.tl_name = "tcp";
    params.dev_name = "lo";
    params.async = loop->get();
    auto a = md_->iface_open(params), b = md_->iface_open(params);
    ASSERT_TRUE(a.ok() && b.ok());
    auto ep = connect(**a, **b);
    ASSERT_NE(ep, nullptr);
    Region target = make_region(1 << 20, kAccessAll, 15);
    std::vector<uint8_t> src(1 << 20);
    fill(src, 16);
    Iov iov{src.data(), src.size(), nullptr};
    Comp c;
    // Caller-driven: a's progress() also drives the loop b's sockets are on.
    EXPECT_EQ(finish(ep->put_zcopy(&iov, 1, target.addr(), *target.rkey, &c), c, {a->get()}),
              Status::Ok);
    EXPECT_EQ(target.buf, src);
    // Active messages both ways, b answering from inside its handler (on the
    // caller's loop the handler runs as the message is read, without the
    // iface's lock, which the answer takes).
    auto back = connect(**b, **a);
    ASSERT_NE(back, nullptr);
    std::vector<uint64_t> answers;
    size_t failed_answers = 0;
    ASSERT_EQ((*b)->set_am_handler(6,
                                   [&](const void* data, size_t, unsigned) {
                                     uint64_t v;
                                     std::memcpy(&v, data, 8);
                                     if (back->am_short(7, v * 2, nullptr, 0) != Status::Ok) {
                                       ++failed_answers;
                                     }
                                     return Status::Ok;
                                   }),
              Status::Ok);
    record_ams(**a, 7, &answers);
    for (uint64_t i = 0; i < 200; ++i) ASSERT_EQ(ep->am_short(6, i, nullptr, 0), Status::Ok);
    ASSERT_TRUE(progress_until([&] { return answers.size() + failed_answers == 200; },
                               {a->get(), b->get()}));
    EXPECT_EQ(failed_answers, 0u);
    for (uint64_t i = 0; i < answers.size(); ++i) ASSERT_EQ(answers[i], 2 * i);
    if (!threaded) {
      // Both ifaces progress the one loop: a round of both is one wait on
      // it (b's sockets were served by a's wait, as above).
      const uint64_t waits = (*loop)->progress_count();
      for (int i = 0; i < 10; ++i) {
        (*a)->progress();
        (*b)->progress();
      }
      EXPECT_EQ((*loop)->progress_count() - waits, 10u);
    }
    back.reset();
    ep.reset();
    a->reset();
    b->reset();
  }
}

// --- flow control and misbehaving peers -------------------------------------------

TEST_F(TcpTest, ReceiverThatDoesNotProgressPushesBackOnSenders) {
  const Env small{{"MC_TCP_AM_QUEUE_LEN", "16"},
                  {"MC_TCP_SNDBUF", "256k"},
                  {"MC_TCP_RCVBUF", "256k"},
                  {"MC_TCP_MAX_OUTSTANDING", "64"}};
  auto a = open_iface(small), b = open_iface(small);
  ASSERT_TRUE(a && b);
  auto ep = connect(*a, *b);
  ASSERT_NE(ep, nullptr);
  std::vector<uint64_t> seen;
  size_t bad_payloads = 0;
  auto pattern = [](uint64_t i, size_t j) { return static_cast<uint8_t>(i * 7 + j); };
  ASSERT_EQ(b->set_am_handler(1,
                              [&](const void* data, size_t n, unsigned) {
                                uint64_t v;
                                std::memcpy(&v, data, 8);
                                seen.push_back(v);
                                const auto* p = static_cast<const uint8_t*>(data) + 8;
                                for (size_t j = 0; j + 8 < n; ++j) {
                                  if (p[j] != pattern(v, j)) {
                                    ++bad_payloads;
                                    break;
                                  }
                                }
                                return Status::Ok;
                              }),
            Status::Ok);
  std::vector<uint8_t> payload(1000, 1);
  uint64_t sent = 0;
  Status s = Status::Ok;
  // Only the sender progresses: b's queue fills, b stops reading, TCP stops a.
  // Each message has its own payload: one left queued must not read the
  // buffer (or the stack) that the next call reuses.
  const auto end = std::chrono::steady_clock::now() + kDeadline;
  while (std::chrono::steady_clock::now() < end) {
    for (size_t j = 0; j < payload.size(); ++j) payload[j] = pattern(sent, j);
    s = ep->am_short(1, sent, payload.data(), payload.size());
    if (s != Status::Ok) break;
    ++sent;
    a->progress();
  }
  ASSERT_EQ(s, Status::NoResource) << "sent " << sent << " without back-pressure";
  ASSERT_TRUE(progress_until([&] { return seen.size() == sent; }, {a.get(), b.get()}));
  for (uint64_t i = 0; i < sent; ++i) ASSERT_EQ(seen[i], i);
  EXPECT_EQ(bad_payloads, 0u);
  EXPECT_EQ(ep->am_short(1, sent, nullptr, 0), Status::Ok);
}

TEST_F(TcpTest, PeerThatNeverReadsRepliesIsThrottled) {
  // Small buffers (not too small: loopback segments are 64 KiB) so that the
  // kernel cannot absorb all the requests below.
  auto b = open_iface({{"MC_TCP_SNDBUF", "256k"}, {"MC_TCP_RCVBUF", "256k"}});
  ASSERT_NE(b, nullptr);
  Region target = make_region(4096, kAccessAll);
  wire::RkeyPayload key;
  ASSERT_TRUE(
      wire::decode_rkey({target.packed.data() + target.packed.size() - wire::kRkeyPayloadSize,
                         wire::kRkeyPayloadSize},
                        &key, nullptr));
  const int fd = raw_connect(*wire::decode_iface_addr(b->iface_address()), 256 * 1024);
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(send_hello(fd));
  // Up to 200000 get requests (9.6 MB) without reading a single reply.
  constexpr uint64_t kMax = 200000;
  uint64_t sent = 0;
  bool blocked = false;
  uint8_t frame[wire::kHeaderSize];
  size_t partial = 0;  // bytes of the current frame already sent
  while (sent < kMax && !blocked) {
    wire::FrameHeader h;
    h.op = wire::Op::GetReq;
    h.get_length = 16;
    h.remote_addr = target.addr();
    h.region_id = key.id;
    h.region_key = key.key;
    h.req_id = sent + 1;
    wire::encode(h, frame);
    const ssize_t w =
        send(fd, frame + partial, sizeof(frame) - partial, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (w > 0) {
      partial += static_cast<size_t>(w);
      if (partial == sizeof(frame)) {
        partial = 0;
        ++sent;
      }
      continue;
    }
    ASSERT_EQ(errno, EAGAIN);
    pollfd p{fd, POLLOUT, 0};
    blocked = poll(&p, 1, 1000) == 0;  // the target stopped reading us
  }
  EXPECT_TRUE(blocked) << "the target read all " << sent << " requests without being read";
  // Reading the replies lets it go on; every request is answered, in order,
  // and the one cut in half completes once its rest arrives.
  auto read_replies = [&](uint64_t from, uint64_t to) {
    for (uint64_t i = from; i <= to; ++i) {
      auto h = read_header(fd);
      ASSERT_TRUE(h.ok()) << "reply " << i << " of " << to;
      ASSERT_EQ(h->op, wire::Op::GetResp);
      ASSERT_EQ(h->req_id, i);
      ASSERT_EQ(h->status, Status::Ok);
      uint8_t data[16];
      ASSERT_TRUE(read_full(fd, data, sizeof(data)));
      ASSERT_EQ(std::memcmp(data, target.buf.data(), 16), 0);
    }
  };
  read_replies(1, sent);
  if (partial) {
    ASSERT_TRUE(write_full(fd, frame + partial, sizeof(frame) - partial));
    read_replies(sent + 1, sent + 1);
  }
  close(fd);
}

// Get requests posted back to back leave together. On a loop the caller
// drives, the first goes at once and the others wait for the loop's next
// wait, which writes them all; sent one by one, each cost a system call
// and a packet on both sides. On a loop with a thread of its own every
// request leaves with no call to progress(). Either way every get
// completes with its bytes.
TEST_F(TcpTest, GetRequestsPostedBackToBackLeaveTogether) {
  constexpr int kGets = 8;
  constexpr int kRequest = static_cast<int>(wire::kHeaderSize);
  for (bool threaded : {false, true}) {
    SCOPED_TRACE(threaded ? "a loop on its own thread" : "a loop the caller drives");
    auto loop = ucs::EventLoop::create();
    ASSERT_TRUE(loop.ok());
    if (threaded) {
      ASSERT_EQ((*loop)->start(), Status::Ok);
    }
    auto a = open_iface({{"MC_TCP_CONNS", "1"}}, {}, loop->get());
    ASSERT_NE(a, nullptr);
    Region fake = make_region(kGets * 4096, kAccessAll, 31);
    RawPeer peer;
    ASSERT_NO_FATAL_FAILURE(raw_peer_up(*a, &peer, fake));
    std::vector<uint8_t> dst(kGets * 4096, 0);
    std::vector<Comp> done(kGets);
    for (int i = 0; i < kGets; ++i) {
      Iov v{dst.data() + i * 4096, 4096, nullptr};
      ASSERT_EQ(peer.ep->get_zcopy(&v, 1, fake.addr() + i * 4096, *fake.rkey, &done[i]),
                Status::InProgress);
    }
    if (threaded) {
      EXPECT_EQ(readable_bytes(peer.fd, kGets * kRequest), kGets * kRequest)
          << "every request left with no call to progress()";
    } else {
      EXPECT_EQ(readable_bytes(peer.fd, kRequest), kRequest) << "only the first request left";
      a->progress();
      EXPECT_EQ(readable_bytes(peer.fd, kGets * kRequest), kGets * kRequest)
          << "the loop's next wait sent the rest";
    }
    std::atomic<bool> served{false};
    std::thread rest([&] { served = answer_gets(peer.fd, fake.buf, fake.addr(), kGets); });
    ASSERT_TRUE(all_done_then_join(done, *a, rest) && served);
    for (const Comp& c : done) EXPECT_EQ(c.result, Status::Ok);
    EXPECT_EQ(dst, fake.buf);
  }
}

// Puts posted back to back leave together too, as get requests do: on a
// loop the caller drives, only the first frame is readable before the
// loop's next wait, and every put lands and completes on its ack.
TEST_F(TcpTest, PutsPostedBackToBackLeaveTogether) {
  constexpr int kPuts = 4;
  constexpr int kFrame = static_cast<int>(wire::kHeaderSize) + 4096;
  auto loop = ucs::EventLoop::create();
  ASSERT_TRUE(loop.ok());
  auto a = open_iface({{"MC_TCP_CONNS", "1"}}, {}, loop->get());
  ASSERT_NE(a, nullptr);
  Region fake = make_region(kPuts * 4096, kAccessAll, 33);
  RawPeer peer;
  ASSERT_NO_FATAL_FAILURE(raw_peer_up(*a, &peer, fake));
  std::vector<uint8_t> src(kPuts * 4096);
  fill(src, 34);
  std::vector<Comp> done(kPuts);
  for (int i = 0; i < kPuts; ++i) {
    Iov v{src.data() + i * 4096, 4096, nullptr};
    ASSERT_EQ(peer.ep->put_zcopy(&v, 1, fake.addr() + i * 4096, *fake.rkey, &done[i]),
              Status::InProgress);
  }
  EXPECT_EQ(readable_bytes(peer.fd, kFrame), kFrame) << "only the first put left";
  a->progress();
  EXPECT_EQ(readable_bytes(peer.fd, kPuts * kFrame), kPuts * kFrame)
      << "the loop's next wait sent the rest";
  std::vector<uint8_t> landed(kPuts * 4096);
  std::atomic<bool> served{true};
  std::thread rest([&] {
    for (int i = 0; i < kPuts; ++i) {
      auto h = read_header(peer.fd);
      if (!h.ok() || h->op != wire::Op::Put || h->length != 4096 ||
          h->remote_addr != fake.addr() + uint64_t(i) * 4096 ||
          !read_full(peer.fd, landed.data() + i * 4096, 4096)) {
        served = false;
        return;
      }
      wire::FrameHeader ack;
      ack.op = wire::Op::PutAck;
      ack.req_id = h->req_id;
      if (!send_header(peer.fd, ack)) {
        served = false;
        return;
      }
    }
  });
  ASSERT_TRUE(all_done_then_join(done, *a, rest) && served);
  for (const Comp& c : done) EXPECT_EQ(c.result, Status::Ok);
  EXPECT_EQ(landed, src);
}

TEST_F(TcpTest, ReplyBeforeTheRequestWasSentIsAProtocolError) {
  Errors errors;
  auto a = open_iface({{"MC_TCP_CONNS", "1"}}, errors.handler());
  ASSERT_NE(a, nullptr);
  Region fake = make_region(64 << 20, kAccessAll);
  RawPeer peer;
  ASSERT_NO_FATAL_FAILURE(raw_peer(*a, &peer));
  const int fd = peer.fd;
  auto& ep = peer.ep;
  ASSERT_TRUE(answer_hello(fd).ok());
  // 64 MiB cannot sit in socket buffers: the put is still being sent when a
  // forged acknowledgement arrives after its header.
  Iov iov{fake.buf.data(), fake.buf.size(), nullptr};
  Comp put;
  ASSERT_EQ(ep->put_zcopy(&iov, 1, fake.addr(), *fake.rkey, &put), Status::InProgress);
  auto h = read_header(fd);
  ASSERT_TRUE(h.ok());
  ASSERT_EQ(h->op, wire::Op::Put);
  wire::FrameHeader ack;
  ack.op = wire::Op::PutAck;
  ack.req_id = h->req_id;
  ASSERT_TRUE(send_header(fd, ack));
  ASSERT_TRUE(progress_until([&] { return put.done && errors.seen.size() == 1; }, {a.get()}));
  EXPECT_EQ(put.result, Status::BadData);
  EXPECT_EQ(errors.seen[0].second, Status::BadData);
}

// --- two processes ---------------------------------------------------------------

bool write_blob(int fd, const std::vector<uint8_t>& b) {
  const uint32_t n = static_cast<uint32_t>(b.size());
  return write_full(fd, &n, 4) && write_full(fd, b.data(), n);
}

bool read_blob(int fd, std::vector<uint8_t>* b) {
  uint32_t n = 0;
  if (!read_full(fd, &n, 4) || n > 4096) return false;
  b->resize(n);
  return read_full(fd, b->data(), n);
}

uint64_t fnv(const uint8_t* p, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

constexpr size_t kChildRegion = 1 << 20;
constexpr uint32_t kChildSeed = 21;

// The child: an iface with a registered region; sends its addresses and
// rkey up `out`, reads the parent's addresses from `in`, answers active
// message 1 with active message 2 (the payload, then a hash of the first
// 256 KiB of its region), and exits when `in` closes. No gtest here.
int child_main(int in, int out) {
  Component* comp = find_component("tcp");
  if (!comp) return 10;
  auto md = comp->md_open("tcp", *ucs::config::Sources::from({}, {}));
  if (!md.ok()) return 11;
  IfaceParams params;
  params.tl_name = "tcp";
  params.dev_name = "lo";
  auto iface = (*md)->iface_open(params);
  if (!iface.ok()) return 12;
  std::vector<uint8_t> region(kChildRegion);
  fill(region, kChildSeed);
  auto memh = (*md)->mem_reg(region.data(), region.size(), kAccessAll);
  std::vector<uint8_t> packed;
  if (!memh.ok() || (*md)->mkey_pack(**memh, &packed) != Status::Ok) return 13;
  if (!write_blob(out, (*iface)->device_address()) || !write_blob(out, (*iface)->iface_address()) ||
      !write_blob(out, packed)) {
    return 14;
  }
  std::vector<uint8_t> dev, addr;
  if (!read_blob(in, &dev) || !read_blob(in, &addr)) return 15;
  auto ep = (*iface)->ep_create(dev, addr);
  if (!ep.ok()) return 16;
  int bad = 0;
  (void)(*iface)->set_am_handler(1, [&](const void* data, size_t n, unsigned) {
    std::vector<uint8_t> reply(static_cast<const uint8_t*>(data),
                               static_cast<const uint8_t*>(data) + n);
    const uint64_t h = fnv(region.data(), 256 * 1024);
    reply.insert(reply.end(), reinterpret_cast<const uint8_t*>(&h),
                 reinterpret_cast<const uint8_t*>(&h) + 8);
    auto pack = [](void* dest, void* arg) {
      auto* r = static_cast<std::vector<uint8_t>*>(arg);
      std::memcpy(dest, r->data(), r->size());
      return r->size();
    };
    if (!(*ep)->am_bcopy(2, pack, &reply).ok()) ++bad;
    return Status::Ok;
  });
  const auto end = std::chrono::steady_clock::now() + 60s;
  while (std::chrono::steady_clock::now() < end) {
    (*iface)->progress();
    pollfd p{in, POLLIN, 0};
    if (poll(&p, 1, 1) == 1) break;  // the parent closed its end (or wrote)
  }
  ep->reset();
  memh->reset();
  iface->reset();
  return bad ? 17 : 0;
}

struct Child {
  pid_t pid = -1;
  int to = -1, from = -1;
  std::vector<uint8_t> dev, addr, packed;

  bool start() {
    int down[2], up[2];
    if (pipe2(down, O_CLOEXEC) != 0 || pipe2(up, O_CLOEXEC) != 0) return false;
    pid = fork();
    if (pid == 0) {
      close(down[1]);
      close(up[0]);
      _exit(child_main(down[0], up[1]));
    }
    close(down[0]);
    close(up[1]);
    to = down[1];
    from = up[0];
    return pid > 0 && read_blob(from, &dev) && read_blob(from, &addr) && read_blob(from, &packed);
  }
  bool send_parent(Iface& iface) {
    return write_blob(to, iface.device_address()) && write_blob(to, iface.iface_address());
  }
  // The exit status, or -1 when it did not exit within the deadline (killed).
  int stop() {
    if (to >= 0) close(to);
    to = -1;
    int status = 0;
    const auto end = std::chrono::steady_clock::now() + kDeadline;
    while (pid > 0 && waitpid(pid, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > end) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        pid = -1;
        return -1;
      }
      std::this_thread::sleep_for(10ms);
    }
    pid = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  ~Child() {
    if (pid > 0) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
    if (to >= 0) close(to);
    if (from >= 0) close(from);
  }
};

TEST_F(TcpTest, TwoProcessesPutGetAndActiveMessages) {
  Child child;
  ASSERT_TRUE(child.start());
  auto a = open_iface();
  ASSERT_NE(a, nullptr);
  ASSERT_TRUE(child.send_parent(*a));
  auto ep = a->ep_create(child.dev, child.addr);
  ASSERT_TRUE(ep.ok());
  auto rkey = unpack(child.packed);
  ASSERT_NE(rkey, nullptr);
  wire::RkeyPayload key;
  ASSERT_TRUE(wire::decode_rkey(
      {child.packed.data() + child.packed.size() - wire::kRkeyPayloadSize, wire::kRkeyPayloadSize},
      &key, nullptr));

  std::vector<uint8_t> expected(kChildRegion);
  fill(expected, kChildSeed);
  std::vector<uint8_t> src(256 * 1024);
  fill(src, 22);
  Iov iov{src.data(), src.size(), nullptr};
  Comp put;
  ASSERT_EQ(finish((*ep)->put_zcopy(&iov, 1, key.base, *rkey, &put), put, {a.get()}), Status::Ok);
  std::vector<uint8_t> back(512 * 1024);
  Iov giov{back.data(), back.size(), nullptr};
  Comp get;
  ASSERT_EQ(finish((*ep)->get_zcopy(&giov, 1, key.base + 512 * 1024, *rkey, &get), get, {a.get()}),
            Status::Ok);
  EXPECT_EQ(std::memcmp(back.data(), expected.data() + 512 * 1024, back.size()), 0);
  Iov giov2{back.data(), src.size(), nullptr};
  Comp get2;
  ASSERT_EQ(finish((*ep)->get_zcopy(&giov2, 1, key.base, *rkey, &get2), get2, {a.get()}),
            Status::Ok);
  EXPECT_EQ(std::memcmp(back.data(), src.data(), src.size()), 0);

  std::vector<uint8_t> reply;
  ASSERT_EQ(a->set_am_handler(2,
                              [&](const void* data, size_t n, unsigned) {
                                reply.assign(static_cast<const uint8_t*>(data),
                                             static_cast<const uint8_t*>(data) + n);
                                return Status::Ok;
                              }),
            Status::Ok);
  const char hello[] = "hello from the parent";
  ASSERT_EQ((*ep)->am_short(1, 42, hello, sizeof(hello)), Status::Ok);
  ASSERT_TRUE(progress_until([&] { return !reply.empty(); }, {a.get()}));
  ASSERT_EQ(reply.size(), 8 + sizeof(hello) + 8);
  EXPECT_EQ(reply[0], 42);
  EXPECT_EQ(std::memcmp(reply.data() + 8, hello, sizeof(hello)), 0);
  uint64_t h = 0;
  std::memcpy(&h, reply.data() + 8 + sizeof(hello), 8);
  EXPECT_EQ(h, fnv(src.data(), src.size())) << "the child does not see the put";
  ep->reset();
  EXPECT_EQ(child.stop(), 0);
}

TEST_F(TcpTest, KilledPeerFailsOutstandingOperationsAndCallsTheHandlerOnce) {
  Child child;
  ASSERT_TRUE(child.start());
  Errors errors;
  auto a = open_iface({}, errors.handler());
  ASSERT_NE(a, nullptr);
  ASSERT_TRUE(child.send_parent(*a));
  auto ep = a->ep_create(child.dev, child.addr);
  ASSERT_TRUE(ep.ok());
  auto rkey = unpack(child.packed);
  ASSERT_NE(rkey, nullptr);
  wire::RkeyPayload key;
  ASSERT_TRUE(wire::decode_rkey(
      {child.packed.data() + child.packed.size() - wire::kRkeyPayloadSize, wire::kRkeyPayloadSize},
      &key, nullptr));
  std::vector<uint8_t> src(kChildRegion);
  fill(src, 23);
  Iov iov{src.data(), src.size(), nullptr};
  Comp warm;
  ASSERT_EQ(finish((*ep)->put_zcopy(&iov, 1, key.base, *rkey, &warm), warm, {a.get()}), Status::Ok);

  // Stopped, the peer answers nothing: everything posted now stays in flight.
  ASSERT_EQ(kill(child.pid, SIGSTOP), 0);
  int wstatus = 0;  // stopping is asynchronous: wait until every thread is
  ASSERT_EQ(waitpid(child.pid, &wstatus, WUNTRACED), child.pid);
  ASSERT_TRUE(WIFSTOPPED(wstatus));
  std::vector<Comp> comps(12);
  std::vector<uint8_t> sink(kChildRegion);
  Iov giov{sink.data(), sink.size(), nullptr};
  for (size_t i = 0; i < comps.size(); ++i) {
    const Status s = i % 3 == 2 ? (*ep)->get_zcopy(&giov, 1, key.base, *rkey, &comps[i])
                                : (*ep)->put_zcopy(&iov, 1, key.base, *rkey, &comps[i]);
    ASSERT_EQ(s, Status::InProgress) << i;
  }
  for (int i = 0; i < 20; ++i) a->progress();
  ASSERT_EQ(kill(child.pid, SIGKILL), 0);
  EXPECT_EQ(child.stop(), -1);

  auto all_done = [&] {
    for (auto& c : comps) {
      if (!c.done) return false;
    }
    return !errors.seen.empty();
  };
  ASSERT_TRUE(progress_until(all_done, {a.get()}));
  for (size_t i = 0; i < comps.size(); ++i) EXPECT_TRUE(is_error(comps[i].result)) << i;
  ASSERT_EQ(errors.seen.size(), 1u);
  EXPECT_EQ(errors.seen[0].first, ep->get());
  EXPECT_TRUE(is_error(errors.seen[0].second));
  for (int i = 0; i < 100; ++i) a->progress();
  EXPECT_EQ(errors.seen.size(), 1u);
  EXPECT_TRUE(is_error((*ep)->put_zcopy(&iov, 1, key.base, *rkey, &warm)));
}


// A hostile peer holding a valid key (the region's id and secret) asks for
// bytes just outside the region, wrapping ranges and oversized frames: each
// request is refused (Rejected) or its connection dropped, canaries on both
// sides of the registered range stay intact, and a good peer is served.
TEST_F(TcpTest, HostilePeerWithAValidKeyCannotReachOutsideTheRegion) {
  auto b = open_iface();
  ASSERT_NE(b, nullptr);
  const uint16_t port = *wire::decode_iface_addr(b->iface_address());
  constexpr size_t kPage = 4096;
  constexpr uint8_t kCanaryByte = 0xa5;
  std::vector<uint8_t> mem(3 * kPage, kCanaryByte);
  uint8_t* region = mem.data() + kPage;
  std::vector<uint8_t> inside(kPage);
  fill(inside, 41);
  std::memcpy(region, inside.data(), kPage);
  auto memh = md_->mem_reg(region, kPage, kAccessAll);
  ASSERT_TRUE(memh.ok());
  std::vector<uint8_t> packed;
  ASSERT_EQ(md_->mkey_pack(**memh, &packed), Status::Ok);
  wire::RkeyPayload key;
  ASSERT_TRUE(wire::decode_rkey(
      {packed.data() + packed.size() - wire::kRkeyPayloadSize, wire::kRkeyPayloadSize}, &key,
      nullptr));
  const uint64_t base = reinterpret_cast<uintptr_t>(region);
  ASSERT_EQ(key.base, base);

  struct Bad {
    wire::Op op;
    uint64_t addr;
    uint32_t len;  // payload of a Put, get length of a GetReq
  };
  const Bad bad[] = {
      {wire::Op::Put, base - 16, 32},          // straddles the start
      {wire::Op::Put, base + kPage - 8, 16},   // straddles the end
      {wire::Op::Put, base + kPage, 1},        // just past the end
      {wire::Op::Put, base - 1, 1},            // just before the start
      {wire::Op::Put, ~uint64_t{0} - 7, 16},   // wraps around
      {wire::Op::GetReq, base - 1, 2},         // straddles the start
      {wire::Op::GetReq, base, kPage + 1},     // one byte too many
      {wire::Op::GetReq, ~uint64_t{0} - 3, 8}, // wraps around
      {wire::Op::GetReq, base, 0xffffffffu},   // oversized get
      {wire::Op::Put, base, 0xffffffffu},      // oversized frame (no payload follows)
  };
  int refused = 0, dropped = 0;
  int fd = -1;
  uint64_t req_id = 100;
  for (const Bad& r : bad) {
    if (fd < 0) {
      fd = raw_connect(port);
      ASSERT_GE(fd, 0);
      ASSERT_TRUE(send_hello(fd));
    }
    wire::FrameHeader h;
    h.op = r.op;
    h.remote_addr = r.addr;
    h.region_id = key.id;
    h.region_key = key.key;
    h.req_id = ++req_id;
    if (r.op == wire::Op::Put) {
      h.length = r.len;
    } else {
      h.get_length = r.len;
    }
    ASSERT_TRUE(send_header(fd, h));
    if (r.op == wire::Op::Put && r.len <= kPage * 2) {
      std::vector<uint8_t> payload(r.len, 0x11);
      (void)write_full(fd, payload.data(), payload.size());  // may be closed already
    }
    Result<wire::FrameHeader> reply = read_header(fd);
    if (!reply.ok()) {  // the connection was dropped: also an answer
      EXPECT_TRUE(closed_by_peer(fd));
      close(fd);
      fd = -1;
      ++dropped;
      continue;
    }
    ++refused;
    EXPECT_EQ(reply->op, r.op == wire::Op::Put ? wire::Op::PutAck : wire::Op::GetResp);
    EXPECT_EQ(reply->req_id, h.req_id);
    EXPECT_NE(reply->status, Status::Ok) << "addr 0x" << std::hex << r.addr << " len " << r.len;
    EXPECT_EQ(reply->length, 0u) << "a refused get returned data";
  }
  if (fd >= 0) close(fd);
  EXPECT_GT(refused, 0);
  EXPECT_GT(dropped, 0);  // at least the oversized frame
  for (size_t i = 0; i < kPage; ++i) {
    ASSERT_EQ(mem[i], kCanaryByte) << "canary before the region, byte " << i;
    ASSERT_EQ(mem[2 * kPage + i], kCanaryByte) << "canary after the region, byte " << i;
  }
  EXPECT_EQ(std::memcmp(region, inside.data(), kPage), 0) << "the region itself changed";

  // A well-behaved peer is still served, within the region.
  auto a = open_iface();
  ASSERT_NE(a, nullptr);
  auto ep = connect(*a, *b);
  ASSERT_NE(ep, nullptr);
  auto rkey = unpack(packed);
  ASSERT_NE(rkey, nullptr);
  std::vector<uint8_t> src(kPage, 0x3c);
  Iov iov{src.data(), src.size(), nullptr};
  Comp c;
  EXPECT_EQ(finish(ep->put_zcopy(&iov, 1, base, *rkey, &c), c, {a.get()}), Status::Ok);
  EXPECT_EQ(std::memcmp(region, src.data(), kPage), 0);
  for (size_t i = 0; i < kPage; ++i) {
    ASSERT_EQ(mem[i], kCanaryByte);
    ASSERT_EQ(mem[2 * kPage + i], kCanaryByte);
  }
}

}  // namespace
}  // namespace mc::uct::tcp
