// SPDX-License-Identifier: Apache-2.0
// mc_metadata_server's core. Answers follow Mooncake's HTTP metadata server:
// 200 with the value, 404 "metadata not found", 200 "metadata updated" /
// "metadata deleted"; malformed requests get 400 with the reason and close.
// Beyond it: ETags with If-Match / If-None-Match (412), a bound on the total
// size (507), a bearer token (401), a deadline per request (408) and per
// answer, connection caps that evict idle connections, and an acceptor that
// outlives running out of file descriptors.
#include "tools/metadata/metadata_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <system_error>
#include <thread>

#include "tools/metadata/socket_io.h"
#include "ucs/config/parser.h"
#include "ucs/log/log.h"
#include "ucs/sys/sys.h"

namespace mc::tools::metadata {

namespace {

constexpr int kListenBacklog = 128;
// Descriptors the process needs besides its connections (stdio, the
// listener, the spare, glog).
constexpr size_t kReservedFds = 16;
// How long a refused request's remaining bytes are read before closing.
constexpr auto kDrainTime = std::chrono::seconds(1);

const char* reason_phrase(int status) {
  switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 304: return "Not Modified";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 412: return "Precondition Failed";
    case 413: return "Payload Too Large";
    case 431: return "Request Header Fields Too Large";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    case 507: return "Insufficient Storage";
    default: return "Error";
  }
}

// The peer's address without the port: the unit of max_connections_per_peer.
std::string peer_address(const sockaddr_storage& addr) {
  char text[INET6_ADDRSTRLEN] = "?";
  if (addr.ss_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in&>(addr).sin_addr, text, sizeof(text));
  } else if (addr.ss_family == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6&>(addr).sin6_addr, text, sizeof(text));
  }
  return text;
}

// Takes a time that depends on the lengths only, not on where the texts
// differ, so a token cannot be found byte by byte from answer times.
bool same_secret(std::string_view a, std::string_view b) {
  const size_t n = std::max(a.size(), b.size());
  unsigned diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= static_cast<unsigned>(x ^ y);
  }
  return diff == 0;
}

bool is_resource_error(int e) {
  return e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM;
}

// accept() errors that leave the listener unusable; the others concern one
// pending connection (ECONNABORTED, EPROTO, ENETDOWN, EPERM, ...).
bool is_fatal_accept_error(int e) {
  return e == EBADF || e == EINVAL || e == ENOTSOCK || e == EFAULT;
}

int open_spare() {
  return open("/dev/null", O_RDONLY | O_CLOEXEC);
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
    // Non-blocking, so that the acceptor polls it and can pause polling it.
    fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
    if (fd < 0) {
      why = "socket: " + ucs::errno_string(errno);
      continue;
    }
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, a->ai_addr, a->ai_addrlen) != 0 || listen(fd, kListenBacklog) != 0) {
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
  rlimit nofile{};
  if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur != RLIM_INFINITY &&
      options.max_connections + kReservedFds > nofile.rlim_cur) {
    MC_LOG(warn) << "--max-connections " << options.max_connections
                 << " needs more file descriptors than RLIMIT_NOFILE allows (" << nofile.rlim_cur
                 << "): clients beyond that are refused; raise ulimit -n";
  }
  return std::unique_ptr<MetadataServer>(new MetadataServer(options, fd, port));
}

MetadataServer::MetadataServer(const ServerOptions& options, int fd, uint16_t port)
    : options_(options),
      listen_fd_(fd),
      port_(port),
      connections_(options.max_connections, options.max_connections_per_peer),
      store_(options.max_total),
      spare_fd_(open_spare()) {}

MetadataServer::~MetadataServer() {
  stop();
  close(listen_fd_);
  if (spare_fd_ >= 0) close(spare_fd_);
}

void MetadataServer::stop() {
  stopping_ = true;
  shutdown(listen_fd_, SHUT_RDWR);  // wakes the poll of run()
}

void MetadataServer::run() {
  while (!stopping_) {
    sockaddr_storage peer{};
    socklen_t len = sizeof(peer);
    const int fd = accept4(listen_fd_, reinterpret_cast<sockaddr*>(&peer), &len, SOCK_CLOEXEC);
    if (fd >= 0) {
      if (exhausted_) {
        MC_LOG(warn) << "accepting again after refusing " << refused_ << " clients ("
                     << failed_accepts_ << " failed accepts)";
        exhausted_ = false;
        refused_ = failed_accepts_ = refused_logged_ = 0;
      }
      if (spare_fd_ < 0) spare_fd_ = open_spare();
      admit(fd, peer_address(peer));
      continue;
    }
    const int e = errno;
    if (stopping_) return;
    if (e == EAGAIN || e == EWOULDBLOCK) {
      pollfd p{listen_fd_, POLLIN, 0};
      poll(&p, 1, -1);
    } else if (is_resource_error(e)) {
      refuse_while_exhausted(e);
    } else if (is_fatal_accept_error(e)) {
      MC_LOG(error) << "accept failed: " << ucs::errno_string(e);
      return;
    } else {
      MC_LOG(debug) << "accept failed: " << ucs::errno_string(e) << "; accepting the next client";
    }
  }
}

void MetadataServer::refuse_while_exhausted(int error) {
  ++failed_accepts_;
  const auto now = Clock::now();
  const bool first = !exhausted_;
  exhausted_ = true;
  // The spare descriptor makes room to accept the clients waiting in the
  // backlog and close them at once: they see their connection end rather
  // than hang until their own timeout. It is taken back after the pause.
  if (spare_fd_ >= 0) {
    close(spare_fd_);
    spare_fd_ = -1;
  }
  for (int i = 0; i < kListenBacklog; ++i) {
    const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) break;
    close(fd);
    ++refused_;
  }
  if (first) {
    MC_LOG(warn) << "accept failed: " << ucs::errno_string(error)
                 << "; refusing clients until it recovers (" << refused_
                 << " waiting ones closed), retrying every " << kAcceptBackoff.count() << " ms";
    last_log_ = now;
    refused_logged_ = refused_;
  } else if (now - last_log_ >= kRefusalLogInterval) {
    MC_LOG(warn) << "accept still failing: " << ucs::errno_string(error) << "; refused "
                 << refused_ - refused_logged_ << " clients in the last "
                 << std::chrono::duration_cast<std::chrono::seconds>(now - last_log_).count()
                 << " s";
    last_log_ = now;
    refused_logged_ = refused_;
  }
  // The pause: the listener is not polled, so an exhausted table is not
  // retried in a busy loop.
  if (!stopping_) std::this_thread::sleep_for(kAcceptBackoff);
  spare_fd_ = open_spare();
}

void MetadataServer::admit(int fd, const std::string& peer) {
  bool evicted = false;
  const uint64_t id = connections_.add(fd, peer, &evicted);
  if (evicted) MC_LOG(debug) << "evicted the connection idle the longest to admit " << peer;
  if (id == 0) {
    MC_LOG(debug) << "refused " << peer << ": every connection in the way is busy";
    respond_and_close(fd, 503, "too many connections\n");
    return;
  }
  try {
    // Connection threads only touch store_ and connections_, both
    // thread-safe; they are detached because the server lives until the
    // process exits.
    std::thread([this, id, fd] {
      serve(id, fd);
      connections_.remove(id);
      close(fd);
    }).detach();
  } catch (const std::system_error& e) {
    MC_LOG_ONCE(warn) << "cannot start a connection thread: " << e.what()
                      << "; refusing clients while threads are short";
    connections_.remove(id);
    respond_and_close(fd, 503, "out of threads\n");
  }
}

void MetadataServer::serve(uint64_t id, int fd) {
  Connection c;
  struct Uncount {
    MetadataServer* server;
    Connection* c;
    ~Uncount() { server->uncount_in_flight(c, true); }
  } uncount{this, &c};
  // A connection's first request is bounded from the accept on.
  c.deadline = Clock::now() + options_.request_timeout;
  char chunk[65536];
  for (;;) {
    const bool ready = c.need != 0 ? c.buf.size() >= c.need
                                   : find_head_end(c.buf, &c.scanned) != std::string_view::npos ||
                                         c.buf.size() > options_.max_header;
    if (ready && !take_request(id, fd, &c)) return;
    if (ready && c.need == 0) continue;  // a request was answered: parse what follows
    size_t got = 0;
    const RecvResult r = recv_within(fd, chunk, sizeof(chunk), c.deadline, &got);
    if (r == RecvResult::TimedOut && !c.idle && !c.buf.empty()) {
      MC_LOG(debug) << "request not complete within the request timeout; closing";
      respond(fd,
              Reply{408,
                    "request not complete within " +
                        std::to_string(options_.request_timeout.count()) + " ms\n",
                    nullptr, ""},
              false, Clock::now());
      return;
    }
    if (r != RecvResult::Data) return;  // closed, reset, evicted or idle too long
    if (!count_in_flight(&c, got)) {
      // Give back what this request holds and ask once for all of it: of
      // two requests that pass the bound at the same moment (each refused
      // while the other still counted), one then goes on.
      const size_t held = c.counted;
      uncount_in_flight(&c, true);
      if (!count_in_flight(&c, held + got)) {
        MC_LOG(debug) << "request bytes in flight would pass " << options_.max_in_flight
                      << "; refusing a request";
        respond(fd,
                Reply{503, "server busy: too many request bytes in flight; retry\n", nullptr, ""},
                false, Clock::now());
        return;
      }
    }
    if (c.idle) {
      c.idle = false;
      c.deadline = Clock::now() + options_.request_timeout;
    }
    c.buf.append(chunk, got);
  }
}

bool MetadataServer::take_request(uint64_t id, int fd, Connection* c) {
  HttpRequest req;
  size_t consumed = 0;
  int status = 0;
  std::string error;
  const ParseState state = parse_request(c->buf, options_.max_header, options_.max_body, &req,
                                         &consumed, &status, &error);
  if (state == ParseState::Bad) {
    MC_LOG(debug) << "bad request: " << error;
    respond(fd, Reply{status, error + "\n", nullptr, ""}, false, send_deadline());
    drain_within(fd, Clock::now() + kDrainTime);
    return false;
  }
  if (state == ParseState::NeedBody) {
    c->need = consumed;
    // Refused before its body is read, let alone kept.
    if (!authorized(req)) {
      respond(fd, handle(req), false, send_deadline());
      drain_within(fd, Clock::now() + kDrainTime);
      return false;
    }
    if (req.expect_continue && !c->continued) {
      c->continued = true;
      return send_within(fd, "HTTP/1.1 100 Continue\r\n\r\n", "", send_deadline());
    }
    return true;
  }
  c->buf.erase(0, consumed);
  uncount_in_flight(c, false);
  c->scanned = c->need = 0;
  c->continued = false;
  if (!connections_.set_busy(id)) return false;  // evicted meanwhile
  if (!respond(fd, handle(req), req.keep_alive, send_deadline()) || !req.keep_alive) return false;
  connections_.set_idle(id);
  c->idle = c->buf.empty();
  c->deadline = Clock::now() + (c->idle ? options_.idle_timeout : options_.request_timeout);
  return true;
}

bool MetadataServer::count_in_flight(Connection* c, size_t more) {
  size_t now = in_flight_.load();
  do {
    if (more > options_.max_in_flight || now > options_.max_in_flight - more) return false;
  } while (!in_flight_.compare_exchange_weak(now, now + more));
  c->counted += more;
  return true;
}

void MetadataServer::uncount_in_flight(Connection* c, bool all) {
  const size_t keep = all ? 0 : c->buf.size();
  in_flight_ -= c->counted - keep;
  c->counted = keep;
}

bool MetadataServer::authorized(const HttpRequest& req) const {
  if (options_.auth_token.empty() || (req.method == "GET" && req.path == "/health")) return true;
  const auto it = req.headers.find("authorization");
  if (it == req.headers.end()) return false;
  const std::string_view value = it->second;
  const size_t sp = value.find(' ');
  if (sp != 6 || ucs::config::to_lower(value.substr(0, sp)) != "bearer") return false;
  std::string_view token = value.substr(sp + 1);
  while (!token.empty() && token.front() == ' ') token.remove_prefix(1);
  return same_secret(token, options_.auth_token);
}

MetadataServer::Reply MetadataServer::handle(HttpRequest& req) {
  if (!authorized(req)) {
    return {401, "missing or wrong token: send 'Authorization: Bearer <token>'\n", nullptr, ""};
  }
  if (req.path == "/health") {
    if (req.method != "GET") {
      return {405, "method " + clip(req.method) + " not allowed on /health\n", nullptr, ""};
    }
    return {200, "OK\n", nullptr, ""};
  }
  if (req.path != "/metadata") {
    return {404, "no such path: " + clip(req.path) + " (use /metadata?key=<key> or /health)\n",
            nullptr, ""};
  }
  const auto key = req.query.find("key");
  if (key == req.query.end() || key->second.empty()) {
    return {400, "missing key parameter: use /metadata?key=<key>\n", nullptr, ""};
  }
  return handle_key(req, key->second);
}

MetadataServer::Reply MetadataServer::handle_key(HttpRequest& req, const std::string& key) {
  // One line per key operation: contrib/bench-compare-te-scale.sh counts them.
  MC_LOG(debug) << "metadata server: " << clip(req.method) << " " << clip(key);
  Preconditions pre;
  for (auto [name, tag] :
       {std::pair{"if-match", &pre.if_match}, std::pair{"if-none-match", &pre.if_none_match}}) {
    const auto it = req.headers.find(name);
    if (it == req.headers.end()) continue;
    EntityTag t;
    if (!parse_entity_tag(it->second, &t)) {
      return {400,
              std::string("malformed ") + name + " header \"" + clip(it->second) +
                  "\": expected * or a quoted version such as \"17\"\n",
              nullptr, ""};
    }
    *tag = t;
  }
  // A failed precondition answers the key's current value and ETag (both
  // absent when the key is), so that the client learns who holds it.
  auto failed = [](const StoreAnswer& a) {
    return Reply{412, "", a.value, a.value ? entity_tag(a.version) : ""};
  };
  const std::string not_found = "metadata not found\n";
  if (req.method == "GET") {
    const StoreAnswer a = store_.get(key, pre);
    switch (a.result) {
      case StoreResult::Ok: return {200, "", a.value, entity_tag(a.version)};
      case StoreResult::NotModified: return {304, "", nullptr, entity_tag(a.version)};
      case StoreResult::PreconditionFailed: return failed(a);
      default: return {404, not_found, nullptr, ""};
    }
  }
  if (req.method == "PUT" || req.method == "POST") {
    const StoreAnswer a = store_.put(key, std::move(req.body), pre);
    switch (a.result) {
      case StoreResult::Ok: return {200, "metadata updated\n", nullptr, entity_tag(a.version)};
      case StoreResult::PreconditionFailed: return failed(a);
      default:
        return {507,
                "metadata store full: keys and values are bounded to " +
                    std::to_string(options_.max_total) + " bytes in all\n",
                nullptr, ""};
    }
  }
  if (req.method == "DELETE") {
    const StoreAnswer a = store_.remove(key, pre);
    switch (a.result) {
      case StoreResult::Ok: return {200, "metadata deleted\n", nullptr, ""};
      case StoreResult::PreconditionFailed: return failed(a);
      default: return {404, not_found, nullptr, ""};
    }
  }
  return {405, "method " + clip(req.method) + " not allowed: use GET, PUT or DELETE\n", nullptr,
          ""};
}

bool MetadataServer::respond(int fd, const Reply& reply, bool keep_alive,
                             Clock::time_point deadline) const {
  const std::string_view body = reply.value ? std::string_view(*reply.value) : reply.text;
  std::string head =
      "HTTP/1.1 " + std::to_string(reply.status) + " " + reason_phrase(reply.status) + "\r\n";
  // A 304 has no body, and a Content-Length would have to be the 200's.
  if (reply.status != 304) {
    head += std::string("Content-Type: ") +
            (reply.value ? "application/octet-stream" : "text/plain") +
            "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  }
  if (!reply.etag.empty()) head += "ETag: " + reply.etag + "\r\n";
  if (reply.status == 401) head += "WWW-Authenticate: Bearer\r\n";
  head += keep_alive ? "Connection: keep-alive\r\n\r\n" : "Connection: close\r\n\r\n";
  return send_within(fd, head, reply.status == 304 ? std::string_view() : body, deadline);
}

void MetadataServer::respond_and_close(int fd, int status, const std::string& text) const {
  // One try: the acceptor does not wait on a client.
  respond(fd, Reply{status, text, nullptr, ""}, false, Clock::now());
  close(fd);
}

}  // namespace mc::tools::metadata
