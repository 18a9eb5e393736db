// SPDX-License-Identifier: Apache-2.0
// The RPC listener of the Transfer Engine (see rpc_server.h).
//
// One thread polls the listening socket and every connection not yet done
// with: a slow or silent client holds one slot, not the thread. Each
// connection has one deadline (accepted + MC_HANDSHAKE_TIMEOUT) for its whole
// request and reply. At most MC_RPC_MAX_PENDING connections are open, at most
// MC_RPC_MAX_PENDING_PER_PEER of them from one IP address: a new one closes
// the oldest (after serving it, if its request is whole), so that a client
// that sends its request at once is always served. Out of descriptors or
// memory, accepting pauses for accept_backoff and the failure is logged once
// a second; the connections waiting in the backlog are taken when it passes.
#include "ucp/te/rpc_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <random>

#include "ucp/te/handshake.h"
#include "ucs/log/log.h"
#include "ucs/sys/sys.h"

namespace mc::te {

namespace {

// Accepts per round of the loop, so that connections already open are read
// between bursts of new ones.
constexpr int kAcceptBatch = 16;

std::string ms_text(std::chrono::nanoseconds d) {
  return std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(d).count()) + " ms";
}

// At most kRpcMaxErrorText bytes of `text`: its start and its end, with
// what was cut counted in between (an echoed name sits in the middle).
std::string cut(std::string text) {
  if (text.size() <= kRpcMaxErrorText) return text;
  constexpr size_t kHead = 160, kTail = 64;
  const std::string mark = "...[" + std::to_string(text.size() - kHead - kTail) + " bytes cut]...";
  return text.substr(0, kHead) + mark + text.substr(text.size() - kTail);
}

// A segment name for the log: cut, and without control bytes.
std::string printable(const std::string& name) {
  std::string out = cut(name);
  for (char& ch : out) {
    if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f) ch = '?';
  }
  return out;
}

// After a recv() that took no bytes: true to wait for more, false (logged)
// when the connection is over.
bool recv_would_block(ssize_t n, const std::string& peer) {
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return true;
  MC_LOG(debug) << "rpc listener: " << peer << " "
                << (n == 0 ? "closed the connection before a whole request"
                           : "recv: " + ucs::errno_string(errno));
  return false;
}

// An accepted peer's address as text and its port; an IPv4 peer of a
// dual-stack listener (::ffff:a.b.c.d) as plain IPv4.
std::pair<std::string, uint16_t> peer_address(const sockaddr_storage& from) {
  char text[INET6_ADDRSTRLEN] = "?";
  if (from.ss_family == AF_INET) {
    const auto& a = reinterpret_cast<const sockaddr_in&>(from);
    ::inet_ntop(AF_INET, &a.sin_addr, text, sizeof(text));
    return {text, ntohs(a.sin_port)};
  }
  const auto& a = reinterpret_cast<const sockaddr_in6&>(from);
  if (IN6_IS_ADDR_V4MAPPED(&a.sin6_addr)) {
    ::inet_ntop(AF_INET, &a.sin6_addr.s6_addr[12], text, sizeof(text));
  } else {
    ::inet_ntop(AF_INET6, &a.sin6_addr, text, sizeof(text));
  }
  return {text, ntohs(a.sin6_port)};
}

std::vector<uint8_t> error_frame(Status status, const std::string& text) {
  return encode_frame(static_cast<uint16_t>(-static_cast<int>(status)), cut(text));
}

}  // namespace

/// One accepted connection: its request as it arrives, then its reply.
struct RpcServer::Conn {
  enum class Phase { Header, Body, Reply };

  Conn(int fd_, std::string ip_, std::string peer_, uint64_t deadline_)
      : fd(fd_), ip(std::move(ip_)), peer(std::move(peer_)), deadline_ns(deadline_) {}
  ~Conn() { ::close(fd); }
  Conn(const Conn&) = delete;
  Conn& operator=(const Conn&) = delete;

  int fd;
  std::string ip;    ///< the peer's address ("10.0.0.1", "fe80::1"; IPv4 as IPv4)
  std::string peer;  ///< "a.b.c.d:port" or "[v6]:port"
  uint64_t deadline_ns;
  Phase phase = Phase::Header;
  uint8_t hdr[kHandshakeHeaderSize];
  size_t hdr_got = 0;
  FrameHeader frame;
  std::string body;  ///< grows as it arrives, up to frame.length
  std::vector<uint8_t> reply;
  size_t sent = 0;
};

RpcServer::RpcServer(const Params& params, SegmentProvider provider, RequestHandler handler)
    : params_(params), provider_(std::move(provider)), handler_(std::move(handler)) {}

Result<std::unique_ptr<RpcServer>> RpcServer::start(const Params& params, SegmentProvider provider,
                                                    RequestHandler handler) {
  std::unique_ptr<RpcServer> server(new RpcServer(params, std::move(provider), std::move(handler)));
  server->params_.max_pending = std::max<size_t>(1, params.max_pending);
  server->params_.max_pending_per_peer = std::max<size_t>(1, params.max_pending_per_peer);
  MC_RETURN_IF_ERROR(server->bind_listen());
  server->wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (server->wake_fd_ < 0) {
    MC_LOG(error) << "rpc listener: eventfd: " << ucs::errno_string(errno);
    return Status::IoError;
  }
  server->thread_ = std::thread([s = server.get()] { s->run(); });
  return server;
}

RpcServer::~RpcServer() {
  if (thread_.joinable()) {
    const uint64_t one = 1;
    (void)!::write(wake_fd_, &one, sizeof(one));
    thread_.join();
  }
  conns_.clear();
  if (listen_fd_ >= 0) ::close(listen_fd_);
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

Status RpcServer::bind_listen() {
  // The address to bind: IPv4, IPv6, or (empty) IPv6's any accepting IPv4
  // too, IPv4's any where the kernel has no IPv6.
  sockaddr_storage addr{};
  socklen_t addr_len = 0;
  bool dual = false;
  std::string shown = params_.bind_ip;
  auto* a4 = reinterpret_cast<sockaddr_in*>(&addr);
  auto* a6 = reinterpret_cast<sockaddr_in6*>(&addr);
  if (params_.bind_ip.empty()) {
    const int probe = ::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
    dual = probe >= 0;
    if (probe >= 0) ::close(probe);
    shown = dual ? "::" : "0.0.0.0";
  }
  if (dual || ::inet_pton(AF_INET6, shown.c_str(), &a6->sin6_addr) == 1) {
    a6->sin6_family = AF_INET6;
    if (dual) a6->sin6_addr = in6addr_any;
    addr_len = sizeof(sockaddr_in6);
  } else if (::inet_pton(AF_INET, shown.c_str(), &a4->sin_addr) == 1) {
    a4->sin_family = AF_INET;
    addr_len = sizeof(sockaddr_in);
  } else {
    MC_LOG(error) << "rpc listener: '" << params_.bind_ip << "' is not an IPv4 or IPv6 address";
    return Status::InvalidParam;
  }
  uint32_t first = params_.port, last = params_.port;
  if (params_.port == 0) {
    if (params_.min_port > params_.max_port || params_.min_port == 0) {
      MC_LOG(error) << "rpc listener: empty port range MC_MIN_RPC_PORT=" << params_.min_port
                    << " > MC_MAX_RPC_PORT=" << params_.max_port;
      return Status::InvalidParam;
    }
    first = params_.min_port;
    last = params_.max_port;
  }
  // A random start spreads engines started together over the range.
  const uint32_t span = last - first + 1;
  std::random_device rd;
  const uint32_t start = params_.port == 0 ? rd() % span : 0;
  int last_errno = 0;
  for (uint32_t i = 0; i < span; ++i) {
    const uint16_t port = static_cast<uint16_t>(first + (start + i) % span);
    const int fd = ::socket(addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      MC_LOG(error) << "rpc listener: socket: " << ucs::errno_string(errno);
      return Status::IoError;
    }
    if (addr.ss_family == AF_INET6) {
      a6->sin6_port = htons(port);
      const int v6only = dual ? 0 : 1;
      ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, sizeof(v6only));
    } else {
      a4->sin_port = htons(port);
    }
    // A restarted engine takes its port back while old handshake
    // connections sit in TIME_WAIT.
    const int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), addr_len) == 0 &&
        ::listen(fd, params_.backlog) == 0) {
      listen_fd_ = fd;
      port_ = port;
      where_ = join_host_port(shown, port);
      return Status::Ok;
    }
    last_errno = errno;
    ::close(fd);
    if (last_errno != EADDRINUSE && last_errno != EACCES) break;
  }
  MC_LOG(error) << "rpc listener: cannot bind " << shown << " port "
                << (params_.port ? std::to_string(params_.port)
                                 : std::to_string(first) + "-" + std::to_string(last))
                << ": " << ucs::errno_string(last_errno);
  return last_errno == EADDRINUSE ? Status::Busy : Status::IoError;
}

void RpcServer::run() {
  ucs::set_thread_name("mc_te_rpc");
  std::vector<pollfd> fds;
  std::vector<std::list<Conn>::iterator> polled;
  for (;;) {
    const uint64_t now = ucs::monotonic_ns();
    const int timeout_ms = expire(now);
    const bool accepting = now >= paused_until_;
    fds.assign({{wake_fd_, POLLIN, 0}, {accepting ? listen_fd_ : -1, POLLIN, 0}});
    polled.clear();
    for (auto it = conns_.begin(); it != conns_.end(); ++it) {
      fds.push_back(
          {it->fd, static_cast<short>(it->phase == Conn::Phase::Reply ? POLLOUT : POLLIN), 0});
      polled.push_back(it);
    }
    const int rc = ::poll(fds.data(), fds.size(), timeout_ms);
    if (rc < 0) {
      if (errno == EINTR) continue;
      MC_LOG(error) << "rpc listener: poll: " << ucs::errno_string(errno);
      return;
    }
    if (fds[0].revents != 0) return;
    // Connections open first: a new one may close the oldest.
    for (size_t i = 0; i < polled.size(); ++i) {
      if (fds[i + 2].revents != 0 && progress(*polled[i]) == Step::Close) conns_.erase(polled[i]);
    }
    if (fds[1].revents != 0) accept_ready(ucs::monotonic_ns());
  }
}

int RpcServer::expire(uint64_t now) {
  uint64_t next = now >= paused_until_ ? UINT64_MAX : paused_until_;
  for (auto it = conns_.begin(); it != conns_.end();) {
    if (it->deadline_ns > now) {
      next = std::min(next, it->deadline_ns);
      ++it;
      continue;
    }
    if (auto v = dropped_log_.check(); v.log) {
      MC_LOG(warn) << "rpc listener: closing " << it->peer << ": "
                   << (it->phase == Conn::Phase::Reply ? "its reply was not taken"
                                                       : "no whole request")
                   << " within " << ms_text(params_.io_timeout) << " (MC_HANDSHAKE_TIMEOUT)"
                   << v.note();
    }
    it = conns_.erase(it);
  }
  if (next == UINT64_MAX) return -1;
  // Rounded up: waking before the deadline would only poll again.
  return static_cast<int>(std::min<uint64_t>((next - now + 999999) / 1000000, 60000));
}

void RpcServer::accept_ready(uint64_t now) {
  for (int n = 0; n < kAcceptBatch; ++n) {
    sockaddr_storage from{};
    socklen_t from_len = sizeof(from);
    const int fd = ::accept4(listen_fd_, reinterpret_cast<sockaddr*>(&from), &from_len,
                             SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      const int err = errno;
      if (err == EAGAIN || err == EWOULDBLOCK) return;
      if (ucs::accept_retry_now(err)) continue;
      // Out of descriptors (EMFILE, ENFILE), buffers or memory, or worse:
      // the listening socket stays readable, so polling it again now would
      // spin. The connections wait in the backlog meanwhile.
      paused_until_ = now + static_cast<uint64_t>(params_.accept_backoff.count());
      ++accept_failed_;
      if (auto v = accept_log_.check(); v.log) {
        MC_LOG(warn) << "rpc listener: accept on " << where_ << ": " << ucs::errno_string(err)
                     << "; " << v.suppressed + 1 << " failed since the last report, pausing "
                     << ms_text(params_.accept_backoff) << " after each";
      }
      return;
    }
    if (accept_failed_ > 0) {
      MC_LOG(warn) << "rpc listener: accept on " << where_ << " works again after "
                   << std::exchange(accept_failed_, 0) << " failures";
    }
    const auto [ip, port] = peer_address(from);
    make_room(ip);
    conns_.emplace_back(fd, ip, join_host_port(ip, port),
                        now + static_cast<uint64_t>(params_.io_timeout.count()));
    // Most clients send their request with the connection: serve it now.
    if (progress(conns_.back()) == Step::Close) conns_.pop_back();
  }
}

void RpcServer::make_room(const std::string& ip) {
  auto same_peer = [ip](const Conn& c) { return c.ip == ip; };
  if (static_cast<size_t>(std::count_if(conns_.begin(), conns_.end(), same_peer)) >=
      params_.max_pending_per_peer) {
    evict(std::find_if(conns_.begin(), conns_.end(), same_peer),
          "MC_RPC_MAX_PENDING_PER_PEER=" + std::to_string(params_.max_pending_per_peer));
  }
  if (conns_.size() >= params_.max_pending) {
    evict(conns_.begin(), "MC_RPC_MAX_PENDING=" + std::to_string(params_.max_pending));
  }
}

void RpcServer::evict(std::list<Conn>::iterator it, const std::string& cap) {
  // A request that is whole by now is served rather than dropped.
  if (progress(*it) == Step::Close) {
    conns_.erase(it);
    return;
  }
  if (auto v = dropped_log_.check(); v.log) {
    MC_LOG(warn) << "rpc listener: closing " << it->peer
                 << ", the oldest connection without an answer, for a new one (" << cap << ")"
                 << v.note();
  }
  conns_.erase(it);
}

RpcServer::Step RpcServer::progress(Conn& c) {
  if (c.phase == Conn::Phase::Header && read_header(c) == Step::Close) return Step::Close;
  if (c.phase == Conn::Phase::Body && read_body(c) == Step::Close) return Step::Close;
  if (c.phase != Conn::Phase::Reply) return Step::More;
  return send_reply(c);
}

RpcServer::Step RpcServer::read_header(Conn& c) {
  while (c.hdr_got < sizeof(c.hdr)) {
    const ssize_t n = ::recv(c.fd, c.hdr + c.hdr_got, sizeof(c.hdr) - c.hdr_got, MSG_DONTWAIT);
    if (n <= 0) return recv_would_block(n, c.peer) ? Step::More : Step::Close;
    c.hdr_got += static_cast<size_t>(n);
  }
  std::string why;
  Result<FrameHeader> h = decode_frame_header(c.hdr, params_.max_length, &why);
  const bool notify = h.ok() && handler_ && (h->code == kNotify || h->code == kNotifyKey);
  if (h.ok() && (h->code == kGetSegment || h->code == kGetSegmentAuth || notify)) {
    c.frame = *h;
    c.body.reserve(std::min<size_t>(h->length, 64 * 1024));
    c.phase = Conn::Phase::Body;
    return Step::More;
  }
  if (auto v = bad_log_.check(); v.log) {
    MC_LOG(warn) << "rpc listener: bad request from " << c.peer << ": "
                 << (h.ok() ? "unknown code " + std::to_string(h->code) : why) << v.note();
  }
  // A foreign protocol gets no answer beyond a closed connection; a newer
  // or oversized frame of ours is told why.
  if (h.ok()) {
    c.reply = error_frame(Status::Unsupported, "unknown request code");
  } else if (h.status() == Status::VersionMismatch || h.status() == Status::MessageTruncated) {
    c.reply = error_frame(h.status(), why);
  } else {
    return Step::Close;
  }
  c.phase = Conn::Phase::Reply;
  return Step::More;
}

RpcServer::Step RpcServer::read_body(Conn& c) {
  char buf[16 * 1024];
  while (c.body.size() < c.frame.length) {
    const size_t want = std::min(sizeof(buf), c.frame.length - c.body.size());
    const ssize_t n = ::recv(c.fd, buf, want, MSG_DONTWAIT);
    if (n <= 0) return recv_would_block(n, c.peer) ? Step::More : Step::Close;
    c.body.append(buf, static_cast<size_t>(n));
  }
  c.reply = answer(c);
  if (c.reply.empty()) return Step::Close;
  c.phase = Conn::Phase::Reply;
  return Step::More;
}

bool RpcServer::token_ok(const Conn& c, const std::string& token) {
  if (params_.auth_token.empty() || token_equal(token, params_.auth_token)) return true;
  // Told apart in the log, not in the reply.
  if (auto v = bad_log_.check(); v.log) {
    MC_LOG(warn) << "rpc listener: refused " << c.peer << ": "
                 << (token.empty() ? "no auth token (MC_AUTH_TOKEN is set here)"
                                   : "wrong auth token")
                 << v.note();
  }
  return false;
}

std::vector<uint8_t> RpcServer::answer(Conn& c) {
  std::string token, name = std::move(c.body);
  // Notifications always carry the token field (empty when none is set).
  const bool notify = c.frame.code == kNotify || c.frame.code == kNotifyKey;
  if ((c.frame.code == kGetSegmentAuth || notify) &&
      decode_auth_request(std::string(name), &token, &name) != Status::Ok) {
    if (auto v = bad_log_.check(); v.log) {
      MC_LOG(warn) << "rpc listener: bad request from " << c.peer << ": token runs past the payload"
                   << v.note();
    }
    return {};
  }
  if (!token_ok(c, token)) {
    return error_frame(Status::Rejected,
                       "authentication failed: this listener requires MC_AUTH_TOKEN");
  }
  if (notify) {
    RpcReply reply = handler_(c.frame.code, name, c.peer);
    return encode_frame(reply.code, cut(std::move(reply.payload)));
  }
  std::string error;
  Result<std::string> json = provider_(name, &error);
  if (json.ok() && json->size() > params_.max_length) {
    MC_LOG(error) << "rpc listener: descriptor of '" << printable(name) << "' asked by " << c.peer
                  << " is " << json->size()
                  << " bytes, more than MC_HANDSHAKE_MAX_LENGTH=" << params_.max_length;
    return error_frame(Status::MessageTruncated, "descriptor exceeds MC_HANDSHAKE_MAX_LENGTH");
  }
  if (json.ok()) {
    // One line per descriptor served: contrib/bench-compare-te-scale.sh counts
    // them (the handshakes of an openSegment).
    MC_LOG(debug) << "rpc listener: served the descriptor of '" << printable(name) << "' to "
                  << c.peer;
    return encode_frame(0, *json);
  }
  MC_LOG(debug) << "rpc listener: " << c.peer << " asked for '" << printable(name)
                << "': " << cut(error);
  return error_frame(json.status(), error);
}

RpcServer::Step RpcServer::send_reply(Conn& c) {
  while (c.sent < c.reply.size()) {
    const ssize_t n =
        ::send(c.fd, c.reply.data() + c.sent, c.reply.size() - c.sent, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n > 0) {
      c.sent += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return Step::More;
    MC_LOG(debug) << "rpc listener: reply to " << c.peer << ": send: " << ucs::errno_string(errno);
    return Step::Close;
  }
  return Step::Close;  // answered: one request per connection
}

}  // namespace mc::te
