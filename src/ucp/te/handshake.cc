// SPDX-License-Identifier: Apache-2.0
// The handshake frame codec and its client side (see handshake.h).
#include "ucp/te/handshake.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>

#include "ucs/datastruct/wire.h"
#include "ucs/sys/sys.h"

namespace mc::te {

std::vector<uint8_t> encode_frame(uint16_t code, std::string_view payload) {
  std::vector<uint8_t> out;
  out.reserve(kHandshakeHeaderSize + payload.size());
  ucs::WireWriter w(&out);
  w.u32(kHandshakeMagic);
  w.u16(kHandshakeVersion);
  w.u16(code);
  w.u32(static_cast<uint32_t>(payload.size()));
  w.bytes(payload.data(), payload.size());
  return out;
}

std::string encode_auth_request(std::string_view token, std::string_view segment) {
  std::vector<uint8_t> out;
  ucs::WireWriter w(&out);
  w.u32(static_cast<uint32_t>(token.size()));
  w.bytes(token.data(), token.size());
  w.bytes(segment.data(), segment.size());
  return std::string(out.begin(), out.end());
}

Status decode_auth_request(std::string_view payload, std::string* token, std::string* segment) {
  ucs::WireReader r({reinterpret_cast<const uint8_t*>(payload.data()), payload.size()});
  const uint32_t n = r.u32();
  if (!r.ok() || n > payload.size() - 4) return Status::BadData;
  *token = std::string(payload.substr(4, n));
  *segment = std::string(payload.substr(4 + n));
  return Status::Ok;
}

bool token_equal(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

Result<FrameHeader> decode_frame_header(std::span<const uint8_t> header, size_t max_length,
                                        std::string* error) {
  ucs::WireReader r(header);
  const uint32_t magic = r.u32();
  const uint16_t version = r.u16();
  FrameHeader h;
  h.code = r.u16();
  h.length = r.u32();
  if (!r.ok()) {
    *error = "handshake header truncated: " + std::to_string(header.size()) + " of " +
             std::to_string(kHandshakeHeaderSize) + " bytes";
    return Status::BadData;
  }
  if (magic != kHandshakeMagic) {
    *error = "handshake magic is not MCTE (not a transfer engine listener?)";
    return Status::BadData;
  }
  if (version != kHandshakeVersion) {
    *error = "handshake version " + std::to_string(version) + ", expected " +
             std::to_string(kHandshakeVersion);
    return Status::VersionMismatch;
  }
  if (h.length > max_length) {
    *error = "handshake message of " + std::to_string(h.length) +
             " bytes exceeds MC_HANDSHAKE_MAX_LENGTH=" + std::to_string(max_length);
    return Status::MessageTruncated;
  }
  return h;
}

namespace {

// Waits until `fd` is ready for `events` or the deadline passes.
Status wait_fd(int fd, short events, uint64_t deadline_ns, std::string* error) {
  for (;;) {
    const uint64_t now = ucs::monotonic_ns();
    if (now >= deadline_ns) {
      *error = "timed out";
      return Status::Timeout;
    }
    pollfd p{fd, events, 0};
    const int ms = static_cast<int>(std::min<uint64_t>((deadline_ns - now) / 1000000 + 1, 1000));
    const int rc = ::poll(&p, 1, ms);
    if (rc > 0) return Status::Ok;
    if (rc < 0 && errno != EINTR) {
      *error = "poll: " + ucs::errno_string(errno);
      return Status::IoError;
    }
  }
}

}  // namespace

Status send_all(int fd, const void* data, size_t len, uint64_t deadline_ns, std::string* error) {
  const auto* p = static_cast<const uint8_t*>(data);
  while (len > 0) {
    const ssize_t n = ::send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      p += n;
      len -= static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      MC_RETURN_IF_ERROR(wait_fd(fd, POLLOUT, deadline_ns, error));
      continue;
    }
    *error = "send: " + ucs::errno_string(errno);
    return errno == EPIPE || errno == ECONNRESET ? Status::ConnectionReset : Status::IoError;
  }
  return Status::Ok;
}

Status recv_all(int fd, void* data, size_t len, uint64_t deadline_ns, std::string* error) {
  auto* p = static_cast<uint8_t*>(data);
  while (len > 0) {
    const ssize_t n = ::recv(fd, p, len, MSG_DONTWAIT);
    if (n > 0) {
      p += n;
      len -= static_cast<size_t>(n);
      continue;
    }
    if (n == 0) {
      *error = "connection closed by the peer";
      return Status::ConnectionReset;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      MC_RETURN_IF_ERROR(wait_fd(fd, POLLIN, deadline_ns, error));
      continue;
    }
    *error = "recv: " + ucs::errno_string(errno);
    return errno == ECONNRESET ? Status::ConnectionReset : Status::IoError;
  }
  return Status::Ok;
}

Result<std::pair<std::string, uint16_t>> split_host_port(std::string_view text) {
  const size_t colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == text.size()) {
    return Status::InvalidParam;
  }
  unsigned port = 0;
  const char* b = text.data() + colon + 1;
  const char* e = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(b, e, port);
  if (ec != std::errc() || ptr != e || port == 0 || port > 65535) return Status::InvalidParam;
  std::string_view host = text.substr(0, colon);
  if (host.front() == '[') {
    // "[v6]:port": an IPv6 address, nothing but it between the brackets.
    in6_addr a{};
    const std::string inner(host.substr(1, host.size() - 2));
    if (host.size() < 3 || host.back() != ']' || ::inet_pton(AF_INET6, inner.c_str(), &a) != 1) {
      return Status::InvalidParam;
    }
    host = host.substr(1, host.size() - 2);
  } else if (host.find_first_of("[]") != std::string_view::npos) {
    return Status::InvalidParam;
  }
  return std::make_pair(std::string(host), static_cast<uint16_t>(port));
}

std::string join_host_port(const std::string& host, uint16_t port) {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

namespace {

// A non-blocking TCP connection to one address within the deadline.
Result<int> connect_addr(const addrinfo& ai, uint64_t deadline_ns, std::string* error) {
  const int fd = ::socket(ai.ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *error = "socket: " + ucs::errno_string(errno);
    return Status::IoError;
  }
  int rc = ::connect(fd, ai.ai_addr, ai.ai_addrlen);
  if (rc < 0 && errno == EINPROGRESS) {
    Status s = wait_fd(fd, POLLOUT, deadline_ns, error);
    if (s != Status::Ok) {
      ::close(fd);
      return s;
    }
    int err = 0;
    socklen_t len = sizeof(err);
    ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
    rc = err == 0 ? 0 : -1;
    errno = err;
  }
  if (rc < 0) {
    *error = "connect: " + ucs::errno_string(errno);
    ::close(fd);
    return Status::Unreachable;
  }
  return fd;
}

// A non-blocking TCP connection to host:port within the deadline: each
// address the host resolves to (IPv4 and IPv6), in the resolver's order,
// until one connects.
Result<int> connect_to(const std::string& host, uint16_t port, uint64_t deadline_ns,
                       std::string* error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  const int gai = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res);
  if (gai != 0 || res == nullptr) {
    *error = std::string("cannot resolve host: ") + gai_strerror(gai);
    return Status::Unreachable;
  }
  Result<int> fd = Status::Unreachable;
  for (const addrinfo* ai = res; ai != nullptr; ai = ai->ai_next) {
    fd = connect_addr(*ai, deadline_ns, error);
    if (fd.ok() || fd.status() == Status::Timeout) break;
  }
  ::freeaddrinfo(res);
  return fd;
}

}  // namespace

Result<RpcReply> rpc_call(const std::string& host, uint16_t port, uint16_t code,
                          std::string_view payload, size_t max_length,
                          std::chrono::nanoseconds timeout, std::string* error) {
  const std::string where = join_host_port(host, port);
  const uint64_t deadline = ucs::monotonic_ns() + static_cast<uint64_t>(timeout.count());
  std::string why;
  Result<int> fd = connect_to(host, port, deadline, &why);
  if (!fd.ok()) {
    *error = "rpc with " + where + ": " + why;
    return fd.status();
  }
  Status s = Status::Ok;
  RpcReply reply;
  do {
    const std::vector<uint8_t> req = encode_frame(code, payload);
    if ((s = send_all(*fd, req.data(), req.size(), deadline, &why)) != Status::Ok) break;
    uint8_t hdr[kHandshakeHeaderSize];
    if ((s = recv_all(*fd, hdr, sizeof(hdr), deadline, &why)) != Status::Ok) break;
    Result<FrameHeader> h = decode_frame_header(hdr, max_length, &why);
    if (!h.ok()) {
      s = h.status();
      break;
    }
    reply.code = h->code;
    reply.payload.resize(h->length);
    s = recv_all(*fd, reply.payload.data(), reply.payload.size(), deadline, &why);
  } while (false);
  ::close(*fd);
  if (s != Status::Ok) {
    *error = "rpc with " + where + ": " + why;
    return s;
  }
  return reply;
}

Status reply_status(uint16_t code) {
  const int c = -static_cast<int>(code);
  return c >= -18 && c < 0 ? static_cast<Status>(c) : Status::Rejected;
}

Result<std::string> handshake_get_segment(const std::string& host, uint16_t port,
                                          const std::string& segment, size_t max_length,
                                          std::chrono::nanoseconds timeout, std::string* error,
                                          const std::string& token) {
  const std::string payload = token.empty() ? segment : encode_auth_request(token, segment);
  Result<RpcReply> reply = rpc_call(host, port, token.empty() ? kGetSegment : kGetSegmentAuth,
                                    payload, max_length, timeout, error);
  if (!reply.ok()) {
    // rpc_call's text names the peer; keep the handshake's wording.
    if (error->starts_with("rpc ")) *error = "handshake " + error->substr(4);
    return reply.status();
  }
  if (reply->code != 0) {
    *error =
        "handshake with " + host + ":" + std::to_string(port) + ": peer refused: " + reply->payload;
    return reply_status(reply->code);
  }
  return std::move(reply->payload);
}

}  // namespace mc::te
