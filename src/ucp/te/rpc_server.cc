// SPDX-License-Identifier: Apache-2.0
// The RPC listener of the Transfer Engine (see rpc_server.h).
#include "ucp/te/rpc_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <random>

#include "ucp/te/handshake.h"
#include "ucs/log/log.h"
#include "ucs/sys/sys.h"

namespace mc::te {

Result<std::unique_ptr<RpcServer>> RpcServer::start(const Params& params,
                                                    SegmentProvider provider) {
  std::unique_ptr<RpcServer> server(new RpcServer(params, std::move(provider)));
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
  if (listen_fd_ >= 0) ::close(listen_fd_);
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

Status RpcServer::bind_listen() {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  if (::inet_pton(AF_INET, params_.bind_ip.c_str(), &addr.sin_addr) != 1) {
    MC_LOG(error) << "rpc listener: '" << params_.bind_ip << "' is not an IPv4 address";
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
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      MC_LOG(error) << "rpc listener: socket: " << ucs::errno_string(errno);
      return Status::IoError;
    }
    addr.sin_port = htons(port);
    // A restarted engine takes its port back while old handshake
    // connections sit in TIME_WAIT.
    const int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
        ::listen(fd, 128) == 0) {
      listen_fd_ = fd;
      port_ = port;
      return Status::Ok;
    }
    last_errno = errno;
    ::close(fd);
    if (last_errno != EADDRINUSE && last_errno != EACCES) break;
  }
  MC_LOG(error) << "rpc listener: cannot bind " << params_.bind_ip << " port "
                << (params_.port ? std::to_string(params_.port)
                                 : std::to_string(first) + "-" + std::to_string(last))
                << ": " << ucs::errno_string(last_errno);
  return last_errno == EADDRINUSE ? Status::Busy : Status::IoError;
}

void RpcServer::run() {
  for (;;) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
    const int rc = ::poll(fds, 2, -1);
    if (rc < 0) {
      if (errno == EINTR) continue;
      MC_LOG(error) << "rpc listener: poll: " << ucs::errno_string(errno);
      return;
    }
    if (fds[1].revents != 0) return;
    if (fds[0].revents == 0) continue;
    sockaddr_in from{};
    socklen_t from_len = sizeof(from);
    const int fd =
        ::accept4(listen_fd_, reinterpret_cast<sockaddr*>(&from), &from_len, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno != EINTR && errno != EAGAIN && errno != ECONNABORTED) {
        MC_LOG(warn) << "rpc listener: accept: " << ucs::errno_string(errno);
      }
      continue;
    }
    char ip[INET_ADDRSTRLEN] = "?";
    ::inet_ntop(AF_INET, &from.sin_addr, ip, sizeof(ip));
    serve(fd, std::string(ip) + ":" + std::to_string(ntohs(from.sin_port)));
    ::close(fd);
  }
}

// One request, one response. A malformed request gets no answer beyond a
// closed connection; the cause is logged here.
void RpcServer::serve(int fd, const std::string& peer) {
  const uint64_t deadline = ucs::monotonic_ns() + static_cast<uint64_t>(params_.io_timeout.count());
  std::string why;
  uint8_t hdr[kHandshakeHeaderSize];
  if (recv_all(fd, hdr, sizeof(hdr), deadline, &why) != Status::Ok) {
    MC_LOG(debug) << "rpc listener: request: " << why;
    return;
  }
  Result<FrameHeader> h = decode_frame_header(hdr, params_.max_length, &why);
  if (!h.ok() || (h->code != kGetSegment && h->code != kGetSegmentAuth)) {
    MC_LOG(warn) << "rpc listener: bad request: "
                 << (h.ok() ? "unknown code " + std::to_string(h->code) : why);
    if (h.ok() || h.status() == Status::VersionMismatch || h.status() == Status::MessageTruncated) {
      const std::string text = h.ok() ? "unknown request code" : why;
      const uint16_t code =
          static_cast<uint16_t>(-static_cast<int>(h.ok() ? Status::Unsupported : h.status()));
      const std::vector<uint8_t> reply = encode_frame(code, text);
      (void)send_all(fd, reply.data(), reply.size(), deadline, &why);
    }
    return;
  }
  std::string name(h->length, '\0');
  if (recv_all(fd, name.data(), name.size(), deadline, &why) != Status::Ok) {
    MC_LOG(debug) << "rpc listener: request body: " << why;
    return;
  }
  std::string token;
  if (h->code == kGetSegmentAuth &&
      decode_auth_request(std::string(name), &token, &name) != Status::Ok) {
    MC_LOG(warn) << "rpc listener: bad request from " << peer << ": token runs past the payload";
    return;
  }
  if (!params_.auth_token.empty() && !token_equal(token, params_.auth_token)) {
    // Told apart in the log, not in the reply.
    MC_LOG(warn) << "rpc listener: refused " << peer << ": "
                 << (token.empty() ? "no auth token (MC_AUTH_TOKEN is set here)"
                                   : "wrong auth token");
    const std::vector<uint8_t> reply =
        encode_frame(static_cast<uint16_t>(-static_cast<int>(Status::Rejected)),
                     "authentication failed: this listener requires MC_AUTH_TOKEN");
    (void)send_all(fd, reply.data(), reply.size(), deadline, &why);
    return;
  }
  std::string error;
  Result<std::string> json = provider_(name, &error);
  std::vector<uint8_t> reply;
  if (json.ok() && json->size() > params_.max_length) {
    MC_LOG(error) << "rpc listener: descriptor of '" << name << "' is " << json->size()
                  << " bytes, more than MC_HANDSHAKE_MAX_LENGTH=" << params_.max_length;
    reply = encode_frame(static_cast<uint16_t>(-static_cast<int>(Status::MessageTruncated)),
                         "descriptor exceeds MC_HANDSHAKE_MAX_LENGTH");
  } else if (json.ok()) {
    reply = encode_frame(0, *json);
  } else {
    reply = encode_frame(static_cast<uint16_t>(-static_cast<int>(json.status())), error);
  }
  if (send_all(fd, reply.data(), reply.size(), deadline, &why) != Status::Ok) {
    MC_LOG(debug) << "rpc listener: reply: " << why;
  }
}

}  // namespace mc::te
