// SPDX-License-Identifier: Apache-2.0
// mc_metadata_server's core. Answers follow Mooncake's HTTP metadata server:
// 200 with the value, 404 "metadata not found", 200 "metadata updated" /
// "metadata deleted"; malformed requests get 400 with the reason and close.
#include "tools/metadata/metadata_server.h"

#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "ucs/log/log.h"
#include "ucs/sys/sys.h"

namespace mc::tools::metadata {

namespace {

const char* reason_phrase(int status) {
  switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 413: return "Payload Too Large";
    case 431: return "Request Header Fields Too Large";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    default: return "Error";
  }
}

bool send_all(int fd, const std::string& data) {
  size_t sent = 0;
  while (sent < data.size()) {
    const ssize_t n = send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    sent += static_cast<size_t>(n);
  }
  return true;
}

bool respond(int fd, int status, const std::string& body, const std::string& type,
             bool keep_alive) {
  std::string out = "HTTP/1.1 " + std::to_string(status) + " " + reason_phrase(status) +
                    "\r\nContent-Type: " + type +
                    "\r\nContent-Length: " + std::to_string(body.size()) +
                    "\r\nConnection: " + (keep_alive ? "keep-alive" : "close") + "\r\n\r\n";
  out += body;
  return send_all(fd, out);
}

// After an error answer: stop sending and read what the client still sends
// (bounded), so that closing with unread data does not reset the connection
// before the client has read the answer.
void linger_close(int fd) {
  shutdown(fd, SHUT_WR);
  timeval tv{1, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  char buf[65536];
  size_t drained = 0;
  while (drained < (size_t{16} << 20)) {
    const ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) return;
    drained += static_cast<size_t>(n);
  }
}

}  // namespace

ucs::Result<std::unique_ptr<MetadataServer>> MetadataServer::create(const ServerOptions& options,
                                                                    std::string* error) {
  const std::string where = options.host + ":" + std::to_string(options.port);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  const int gai =
      getaddrinfo(options.host.c_str(), std::to_string(options.port).c_str(), &hints, &res);
  if (gai != 0) {
    *error = "cannot resolve " + where + ": " + gai_strerror(gai);
    return ucs::Status::InvalidParam;
  }
  int fd = -1;
  std::string why = "no address";
  for (addrinfo* a = res; a != nullptr && fd < 0; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      why = "socket: " + ucs::errno_string(errno);
      continue;
    }
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, a->ai_addr, a->ai_addrlen) != 0 || listen(fd, 128) != 0) {
      why = ucs::errno_string(errno);
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(res);
  if (fd < 0) {
    *error = "cannot listen on " + where + ": " + why;
    return ucs::Status::IoError;
  }
  sockaddr_storage bound{};
  socklen_t len = sizeof(bound);
  getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len);
  const uint16_t port =
      ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                        : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  return std::unique_ptr<MetadataServer>(new MetadataServer(options, fd, port));
}

MetadataServer::~MetadataServer() {
  stop();
  close(listen_fd_);
}

void MetadataServer::stop() {
  stopping_ = true;
  shutdown(listen_fd_, SHUT_RDWR);
}

void MetadataServer::run() {
  while (!stopping_) {
    const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (!stopping_) MC_LOG(error) << "accept failed: " << ucs::errno_string(errno);
      return;
    }
    if (connections_.load() >= options_.max_connections) {
      respond(fd, 503, "too many connections\n", "text/plain", false);
      close(fd);
      continue;
    }
    ++connections_;
    // Connection threads only touch store_ (under lock_) and connections_;
    // they are detached because the server lives until the process exits.
    std::thread([this, fd] {
      serve(fd);
      close(fd);
      --connections_;
    }).detach();
  }
}

void MetadataServer::serve(int fd) {
  timeval tv{options_.idle_timeout_s, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  std::string buf;
  bool continued = false;
  char chunk[65536];
  for (;;) {
    HttpRequest req;
    size_t consumed = 0;
    int status = 0;
    std::string error;
    const ParseState state = parse_request(buf, options_.max_header, options_.max_body, &req,
                                           &consumed, &status, &error);
    if (state == ParseState::Bad) {
      MC_LOG(debug) << "bad request: " << error;
      respond(fd, status, error + "\n", "text/plain", false);
      linger_close(fd);
      return;
    }
    if (state == ParseState::Complete) {
      buf.erase(0, consumed);
      continued = false;
      std::string body, type;
      const int code = handle(req, &body, &type);
      if (!respond(fd, code, body, type, req.keep_alive) || !req.keep_alive) return;
      continue;
    }
    if (state == ParseState::NeedBody && req.expect_continue && !continued) {
      continued = true;
      if (!send_all(fd, "HTTP/1.1 100 Continue\r\n\r\n")) return;
    }
    const ssize_t n = recv(fd, chunk, sizeof(chunk), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // closed, reset or idle past the timeout
    buf.append(chunk, static_cast<size_t>(n));
  }
}

int MetadataServer::handle(const HttpRequest& req, std::string* body, std::string* type) {
  *type = "text/plain";
  if (req.path == "/health") {
    if (req.method != "GET") {
      *body = "method " + req.method + " not allowed on /health\n";
      return 405;
    }
    *body = "OK\n";
    return 200;
  }
  if (req.path != "/metadata") {
    *body = "no such path: " + req.path + " (use /metadata?key=<key> or /health)\n";
    return 404;
  }
  const auto key = req.query.find("key");
  if (key == req.query.end() || key->second.empty()) {
    *body = "missing key parameter: use /metadata?key=<key>\n";
    return 400;
  }
  std::lock_guard<std::mutex> guard(lock_);
  if (req.method == "GET") {
    const auto it = store_.find(key->second);
    if (it == store_.end()) {
      *body = "metadata not found\n";
      return 404;
    }
    *body = it->second;
    *type = "application/octet-stream";
    return 200;
  }
  if (req.method == "PUT" || req.method == "POST") {
    store_[key->second] = req.body;
    *body = "metadata updated\n";
    return 200;
  }
  if (req.method == "DELETE") {
    if (store_.erase(key->second) == 0) {
      *body = "metadata not found\n";
      return 404;
    }
    *body = "metadata deleted\n";
    return 200;
  }
  *body = "method " + req.method + " not allowed: use GET, PUT or DELETE\n";
  return 405;
}

}  // namespace mc::tools::metadata
