// SPDX-License-Identifier: Apache-2.0
// Socket helpers of the tcp transport.
#include "uct/tcp/tcp_socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>

#include "ucs/log/log.h"
#include "ucs/sys/sys.h"
#include "uct/tcp/tcp_device.h"

namespace mc::uct::tcp {

namespace {

void set_int(int fd, int level, int name, int value, const char* what) {
  if (setsockopt(fd, level, name, &value, sizeof(value)) != 0) {
    MC_LOG(warn) << "tcp: setsockopt(" << what << "=" << value << ") on fd " << fd
                 << " failed: " << ucs::errno_string(errno);
  }
}

int seconds(ucs::config::Duration d) {
  const auto s = std::chrono::duration_cast<std::chrono::seconds>(d).count();
  return s < 1 ? 1 : s > 32767 ? 32767 : static_cast<int>(s);
}

sockaddr_in make_addr(uint32_t ipv4, uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = ipv4;
  a.sin_port = htons(port);
  return a;
}

bool is_unreachable_errno(int err) {
  return err == ECONNREFUSED || err == ENETUNREACH || err == EHOSTUNREACH || err == EADDRNOTAVAIL;
}

ucs::Status connect_errno_status(int err) {
  if (err == ETIMEDOUT) return ucs::Status::Timeout;
  return is_unreachable_errno(err) ? ucs::Status::Unreachable : ucs::Status::IoError;
}

}  // namespace

void apply_socket_options(int fd, const TcpConfig& config, SocketOptions which) {
  if (which != SocketOptions::AllButBuffers) {
    if (config.sndbuf && *config.sndbuf > 0) {
      set_int(fd, SOL_SOCKET, SO_SNDBUF, static_cast<int>(*config.sndbuf), "SO_SNDBUF");
    }
    if (config.rcvbuf && *config.rcvbuf > 0) {
      set_int(fd, SOL_SOCKET, SO_RCVBUF, static_cast<int>(*config.rcvbuf), "SO_RCVBUF");
    }
  }
  if (which == SocketOptions::Buffers) return;
  if (config.nodelay) set_int(fd, IPPROTO_TCP, TCP_NODELAY, 1, "TCP_NODELAY");
  if (config.keepalive) {
    set_int(fd, SOL_SOCKET, SO_KEEPALIVE, 1, "SO_KEEPALIVE");
    set_int(fd, IPPROTO_TCP, TCP_KEEPIDLE, seconds(config.keepidle), "TCP_KEEPIDLE");
    set_int(fd, IPPROTO_TCP, TCP_KEEPINTVL, seconds(config.keepintvl), "TCP_KEEPINTVL");
    set_int(fd, IPPROTO_TCP, TCP_KEEPCNT, static_cast<int>(config.keepcnt), "TCP_KEEPCNT");
  }
  if (config.user_timeout && config.user_timeout->count() > 0) {
    // Unacknowledged data (and, since Linux 5.1, a zero window) for this
    // long aborts the connection instead of minutes of retransmissions.
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(*config.user_timeout);
    set_int(fd, IPPROTO_TCP, TCP_USER_TIMEOUT,
            static_cast<int>(std::min<int64_t>(ms.count(), INT32_MAX)), "TCP_USER_TIMEOUT");
  }
}

ucs::Result<int> listen_socket(uint32_t ipv4, const PortRange& range, int backlog,
                               const TcpConfig& config, uint16_t* port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    MC_LOG(error) << "tcp: socket() failed: " << ucs::errno_string(errno);
    return ucs::Status::IoError;
  }
  set_int(fd, SOL_SOCKET, SO_REUSEADDR, 1, "SO_REUSEADDR");
  apply_socket_options(fd, config, SocketOptions::Buffers);  // inherited by accepted sockets
  int err = 0;
  bool bound = false;
  for (uint32_t p = range.first; p <= range.last && !bound; ++p) {
    sockaddr_in a = make_addr(ipv4, static_cast<uint16_t>(p));
    bound = bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
    if (!bound) err = errno;
  }
  if (!bound) {
    MC_LOG(error) << "tcp: cannot bind " << ip_string(ipv4) << " to a port in [" << range.first
                  << ", " << range.last << "]: " << ucs::errno_string(err);
    close(fd);
    return ucs::Status::IoError;
  }
  sockaddr_in a{};
  socklen_t len = sizeof(a);
  if (listen(fd, backlog) != 0 || getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    MC_LOG(error) << "tcp: listen on " << ip_string(ipv4)
                  << " failed: " << ucs::errno_string(errno);
    close(fd);
    return ucs::Status::IoError;
  }
  *port = ntohs(a.sin_port);
  return fd;
}

ucs::Result<int> connect_socket(uint32_t local_ipv4, uint32_t ipv4, uint16_t port,
                                const TcpConfig& config, bool* done) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    MC_LOG(error) << "tcp: socket() failed: " << ucs::errno_string(errno);
    return ucs::Status::IoError;
  }
  // Buffer sizes must be set before the handshake.
  apply_socket_options(fd, config, SocketOptions::All);
  sockaddr_in local = make_addr(local_ipv4, 0);
  if (bind(fd, reinterpret_cast<sockaddr*>(&local), sizeof(local)) != 0) {
    MC_LOG(error) << "tcp: cannot bind a connecting socket to " << ip_string(local_ipv4) << ": "
                  << ucs::errno_string(errno);
    close(fd);
    return ucs::Status::IoError;
  }
  sockaddr_in remote = make_addr(ipv4, port);
  *done = connect(fd, reinterpret_cast<sockaddr*>(&remote), sizeof(remote)) == 0;
  if (!*done && errno != EINPROGRESS) {
    const int err = errno;
    MC_LOG(error) << "tcp: connect to " << ip_string(ipv4) << ":" << port
                  << " failed: " << ucs::errno_string(err);
    close(fd);
    return connect_errno_status(err);
  }
  return fd;
}

ucs::Status connect_result(int fd, int* err) {
  int value = 0;
  socklen_t len = sizeof(value);
  if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &value, &len) != 0) value = errno;
  *err = value;
  if (value == 0) return ucs::Status::Ok;
  return connect_errno_status(value);
}

std::string peer_name(int fd) {
  sockaddr_in a{};
  socklen_t len = sizeof(a);
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) return "(unknown peer)";
  return ip_string(a.sin_addr.s_addr) + ":" + std::to_string(ntohs(a.sin_port));
}

}  // namespace mc::uct::tcp
