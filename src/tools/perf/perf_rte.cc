// SPDX-License-Identifier: Apache-2.0
// Rte: sockets, framing and timeouts.
#include "tools/perf/perf_rte.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <thread>

#include "ucs/datastruct/wire.h"
#include "ucs/log/log.h"
#include "ucs/sys/sys.h"

namespace mc::perf {

namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kHeaderLen = 5;            // u8 type | u32 length
constexpr uint32_t kMaxPayload = 64 << 20;  // far above any setup blob

int ms_left(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return left.count() < 0 ? 0 : static_cast<int>(std::min<int64_t>(left.count(), 1000));
}

void set_nodelay(int fd) {
  const int one = 1;
  (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

std::string seconds(Duration d) {
  return std::to_string(static_cast<double>(d.count()) / 1000.0).substr(0, 5) + " s";
}

}  // namespace

Rte::~Rte() {
  if (fd_ >= 0) close(fd_);
}

Result<std::unique_ptr<Rte>> Rte::accept(uint16_t port, Duration timeout) {
  const int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (lfd < 0) {
    MC_LOG(error) << "socket() for the control channel failed: " << ucs::errno_string(errno);
    return Status::IoError;
  }
  const int one = 1;
  (void)setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  if (bind(lfd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || listen(lfd, 1) != 0) {
    MC_LOG(error) << "cannot listen on TCP port " << port << ": " << ucs::errno_string(errno);
    close(lfd);
    return Status::IoError;
  }
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    pollfd pfd{lfd, POLLIN, 0};
    const int n = ::poll(&pfd, 1, timeout.count() < 0 ? 1000 : ms_left(deadline));
    if (n > 0) break;
    if (n < 0 && errno != EINTR) {
      MC_LOG(error) << "poll() on the listening socket failed: " << ucs::errno_string(errno);
      close(lfd);
      return Status::IoError;
    }
    if (timeout.count() >= 0 && Clock::now() >= deadline) {
      MC_LOG(error) << "no client connected to port " << port << " within " << seconds(timeout);
      close(lfd);
      return Status::Timeout;
    }
  }
  sockaddr_in peer{};
  socklen_t len = sizeof(peer);
  const int fd = ::accept4(lfd, reinterpret_cast<sockaddr*>(&peer), &len, SOCK_CLOEXEC);
  const int err = errno;
  close(lfd);
  if (fd < 0) {
    MC_LOG(error) << "accept() failed: " << ucs::errno_string(err);
    return Status::IoError;
  }
  set_nodelay(fd);
  char host[INET_ADDRSTRLEN] = "?";
  inet_ntop(AF_INET, &peer.sin_addr, host, sizeof(host));
  return std::unique_ptr<Rte>(
      new Rte(fd, std::string(host) + ":" + std::to_string(ntohs(peer.sin_port))));
}

Result<std::unique_ptr<Rte>> Rte::connect(const std::string& host, uint16_t port,
                                          Duration timeout) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* list = nullptr;
  const std::string service = std::to_string(port);
  if (const int rc = getaddrinfo(host.c_str(), service.c_str(), &hints, &list); rc != 0) {
    MC_LOG(error) << "cannot resolve server '" << host << "': " << gai_strerror(rc);
    return Status::Unreachable;
  }
  const auto deadline = Clock::now() + timeout;
  const std::string name = host + ":" + service;
  int last_err = 0;
  for (;;) {
    for (addrinfo* ai = list; ai; ai = ai->ai_next) {
      const int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
      if (fd < 0) continue;
      if (::connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
        freeaddrinfo(list);
        set_nodelay(fd);
        return std::unique_ptr<Rte>(new Rte(fd, name));
      }
      last_err = errno;
      close(fd);
    }
    // The server may still be starting: retry until the deadline.
    if (timeout.count() >= 0 && Clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  freeaddrinfo(list);
  MC_LOG(error) << "no mc_perftest server answered at " << name << " within " << seconds(timeout)
                << ": " << ucs::errno_string(last_err);
  return Status::Timeout;
}

Status Rte::pair(std::unique_ptr<Rte>* a, std::unique_ptr<Rte>* b) {
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
    MC_LOG(error) << "socketpair() failed: " << ucs::errno_string(errno);
    return Status::IoError;
  }
  a->reset(new Rte(fds[0], "loopback"));
  b->reset(new Rte(fds[1], "loopback"));
  return Status::Ok;
}

Status Rte::send(MsgType type, std::span<const uint8_t> payload) {
  uint8_t header[kHeaderLen];
  header[0] = static_cast<uint8_t>(type);
  const auto n = static_cast<uint32_t>(payload.size());
  ucs::store_le(header + 1, n, 4);
  iovec iov[2] = {{header, kHeaderLen}, {const_cast<uint8_t*>(payload.data()), payload.size()}};
  msghdr msg{};
  msg.msg_iov = iov;
  msg.msg_iovlen = 2;
  size_t left = kHeaderLen + payload.size();
  while (left > 0) {
    const ssize_t sent = sendmsg(fd_, &msg, MSG_NOSIGNAL);
    if (sent < 0 && errno == EINTR) continue;
    if (sent <= 0) {
      MC_LOG(error) << "lost the control connection to " << peer_ << ": "
                    << ucs::errno_string(errno);
      return Status::ConnectionReset;
    }
    left -= static_cast<size_t>(sent);
    // Skip what was sent in the iovecs.
    size_t skip = static_cast<size_t>(sent);
    while (msg.msg_iovlen > 0 && skip >= msg.msg_iov->iov_len) {
      skip -= msg.msg_iov->iov_len;
      ++msg.msg_iov;
      --msg.msg_iovlen;
    }
    if (msg.msg_iovlen > 0) {
      msg.msg_iov->iov_base = static_cast<uint8_t*>(msg.msg_iov->iov_base) + skip;
      msg.msg_iov->iov_len -= skip;
    }
  }
  return Status::Ok;
}

void Rte::send_error(const std::string& text) {
  const std::string why = text.substr(0, 4096);
  std::string frame(kHeaderLen, '\0');
  frame[0] = static_cast<char>(MsgType::Error);
  frame[1] = static_cast<char>(why.size() & 0xff);
  frame[2] = static_cast<char>(why.size() >> 8);
  frame += why;
  // Best effort and never blocking: the peer may be gone already.
  (void)!::send(fd_, frame.data(), frame.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
}

Status Rte::read_full(void* data, size_t length, Clock::time_point deadline, bool forever) {
  auto* p = static_cast<uint8_t*>(data);
  while (length > 0) {
    pollfd pfd{fd_, POLLIN, 0};
    const int n = ::poll(&pfd, 1, forever ? 1000 : ms_left(deadline));
    if (n < 0 && errno != EINTR) {
      MC_LOG(error) << "poll() on the control connection failed: " << ucs::errno_string(errno);
      return Status::IoError;
    }
    if (n <= 0) {
      if (!forever && Clock::now() >= deadline) return Status::Timeout;
      continue;
    }
    const ssize_t got = ::recv(fd_, p, length, 0);
    if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (got <= 0) return Status::ConnectionReset;
    p += got;
    length -= static_cast<size_t>(got);
  }
  return Status::Ok;
}

Result<std::vector<uint8_t>> Rte::recv(MsgType type, Duration timeout) {
  const bool forever = timeout.count() < 0;
  const auto deadline = Clock::now() + (forever ? Duration(0) : timeout);
  uint8_t header[kHeaderLen];
  Status s = read_full(header, kHeaderLen, deadline, forever);
  const auto n = static_cast<uint32_t>(ucs::load_le(header + 1, 4));
  std::vector<uint8_t> payload;
  if (s == Status::Ok && n > kMaxPayload) {
    MC_LOG(error) << "the peer " << peer_ << " sent a malformed control message (" << n
                  << " bytes)";
    return Status::BadData;
  }
  if (s == Status::Ok) {
    payload.resize(n);
    s = read_full(payload.data(), n, deadline, forever);
  }
  if (s == Status::Timeout) {
    MC_LOG(error) << "the peer " << peer_ << " sent nothing for " << seconds(timeout)
                  << " (it hangs or is overloaded)";
    return s;
  }
  if (s == Status::ConnectionReset) {
    if (!quiet_)
      MC_LOG(error) << "the peer " << peer_ << " closed the control connection (it exited or died)";
    return s;
  }
  MC_RETURN_IF_ERROR(s);
  const auto got = static_cast<MsgType>(header[0]);
  if (got == MsgType::Error) {
    if (!quiet_)
      MC_LOG(error) << "the peer " << peer_
                    << " failed: " << std::string(payload.begin(), payload.end());
    return Status::Rejected;
  }
  if (got != type) {
    MC_LOG(error) << "the peer " << peer_ << " sent control message " << unsigned(header[0])
                  << " where " << unsigned(type) << " was due (another version of mc_perftest?)";
    return Status::BadData;
  }
  return payload;
}

Result<bool> Rte::poll() {
  pollfd pfd{fd_, POLLIN, 0};
  if (::poll(&pfd, 1, 0) <= 0) return false;
  uint8_t type = 0;
  const ssize_t n = ::recv(fd_, &type, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return false;
  if (n <= 0) {
    if (!quiet_) {
      MC_LOG(error) << "the peer " << peer_ << " closed the control connection (it exited or died)";
    }
    return Status::ConnectionReset;
  }
  if (static_cast<MsgType>(type) == MsgType::Error) {
    return recv(MsgType::Error, Duration(5000)).status();  // logs the peer's text
  }
  return true;
}

Status Rte::barrier(Duration timeout) {
  MC_RETURN_IF_ERROR(send(MsgType::Barrier));
  return recv(MsgType::Barrier, timeout).status();
}

}  // namespace mc::perf
