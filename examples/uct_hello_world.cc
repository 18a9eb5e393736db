// SPDX-License-Identifier: Apache-2.0
// The classic UCT flow, end to end: an async context, the transport with the
// lowest latency among those asked for, an active-message handler, addresses
// exchanged over a socket, connected endpoints, one message sent as short,
// bcopy or zcopy, progress until it arrives, and cleanup.
//
//   server:  uct_hello_world -t tcp,sm [-d lo] [-p 13337]
//   client:  uct_hello_world -t tcp,sm [-d lo] [-p 13337] -n 127.0.0.1 [-b | -z] [-s 4096]
//   one process (self):  uct_hello_world -t self -l
#include <arpa/inet.h>
#include <getopt.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "ucs/async/event_loop.h"
#include "ucs/config/parser.h"
#include "ucs/log/log.h"
#include "uct/api/ep.h"
#include "uct/api/iface.h"
#include "uct/base/component_loader.h"

namespace {

using namespace mc;
using uct::Status;

constexpr uint8_t kHelloAmId = 1;

struct Options {
  std::vector<std::string> tls = {"tcp", "sm", "self"};
  std::vector<std::string> devices;  // empty: any
  std::string server;                // empty: be the server
  uint16_t port = 13337;
  char proto = 's';                  // s(hort), b(copy), z(copy)
  size_t size = 16;
  bool loopback = false;
};

int usage(const char* prog) {
  std::fprintf(stderr,
               "usage: %s [-t tls] [-d devices] [-n server] [-p port] [-b|-z] [-s size] [-l]\n"
               "  -t  comma-separated transports to choose from (default tcp,sm,self)\n"
               "  -d  comma-separated devices to choose from (default any)\n"
               "  -n  server host: act as the client (default: act as the server)\n"
               "  -p  TCP port for the address exchange (default 13337)\n"
               "  -b  send by bcopy, -z send by zcopy (default: short)\n"
               "  -s  message size in bytes (default 16)\n"
               "  -l  loopback: client and server in this process\n",
               prog);
  return 2;
}

bool contains(const std::vector<std::string>& list, const std::string& s) {
  return list.empty() || std::find(list.begin(), list.end(), s) != list.end();
}

// The chosen transport: its md, its resource and its latency.
struct Choice {
  uct::Component* component = nullptr;
  std::string md_name;
  uct::TlResource tl;
  double latency = 0;
};

// Opens every md of every component and keeps the asked-for resource with
// the lowest latency (as UCX's hello world does).
bool find_lowest_latency(const Options& opt, Choice* best) {
  ucs::config::Sources sources = ucs::config::Sources::from_process().value_or({});
  bool found = false;
  for (uct::Component* c : uct::load_components()) {
    for (const std::string& md_name : c->md_names()) {
      auto md = c->md_open(md_name, sources);
      if (!md.ok()) continue;
      for (const uct::TlResource& tl : (*md)->query_tl_resources()) {
        if (!contains(opt.tls, tl.tl_name) || !contains(opt.devices, tl.dev_name)) continue;
        uct::IfaceParams params;
        params.tl_name = tl.tl_name;
        params.dev_name = tl.dev_name;
        auto iface = (*md)->iface_open(params);
        if (!iface.ok()) continue;
        const double latency = (*iface)->query().latency.at(opt.size);
        std::printf("candidate %s/%s: latency %.3f us\n", tl.tl_name.c_str(), tl.dev_name.c_str(),
                    latency * 1e6);
        if (!found || latency < best->latency) {
          *best = Choice{c, md_name, tl, latency};
          found = true;
        }
      }
    }
  }
  return found;
}

// Address exchange: length-prefixed blobs over one TCP connection.
int exchange_socket(const Options& opt) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(opt.port);
  if (opt.server.empty()) {
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    addr.sin_addr.s_addr = htonl(INADDR_ANY);
    if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || listen(fd, 1) != 0) {
      std::perror("bind/listen");
      return -1;
    }
    std::printf("server: waiting for a client on port %u\n", opt.port);
    std::fflush(stdout);
    const int conn = accept(fd, nullptr, nullptr);
    close(fd);
    return conn;
  }
  if (inet_pton(AF_INET, opt.server.c_str(), &addr.sin_addr) != 1) {
    std::fprintf(stderr, "client: '%s' is not an IPv4 address\n", opt.server.c_str());
    return -1;
  }
  for (int attempt = 0; attempt < 100; ++attempt) {  // the server may still be starting
    if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) return fd;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  std::perror("connect");
  return -1;
}

bool send_blob(int fd, const std::vector<uint8_t>& b) {
  const uint32_t n = static_cast<uint32_t>(b.size());
  return write(fd, &n, 4) == 4 && write(fd, b.data(), n) == static_cast<ssize_t>(n);
}

bool recv_blob(int fd, std::vector<uint8_t>* b) {
  uint32_t n = 0;
  if (read(fd, &n, 4) != 4 || n > 4096) return false;
  b->resize(n);
  size_t got = 0;
  while (got < n) {
    const ssize_t r = read(fd, b->data() + got, n - got);
    if (r <= 0) return false;
    got += static_cast<size_t>(r);
  }
  return true;
}

size_t pack_message(void* dest, void* arg) {
  auto* msg = static_cast<std::vector<uint8_t>*>(arg);
  std::memcpy(dest, msg->data(), msg->size());
  return msg->size();
}

// Sends `msg` with the chosen protocol, progressing while the transport is busy.
Status send_message(uct::Iface& iface, uct::Endpoint& ep, char proto, std::vector<uint8_t>& msg,
                    uct::MemHandle* memh) {
  bool done = false;
  uct::Completion comp;
  comp.arg = &done;
  comp.func = [](uct::Completion* c) { *static_cast<bool*>(c->arg) = true; };
  Status s = Status::NoResource;
  while (s == Status::NoResource) {
    if (proto == 's') {
      uint64_t header = 0;
      std::memcpy(&header, msg.data(), std::min<size_t>(8, msg.size()));
      s = ep.am_short(kHelloAmId, header, msg.data() + 8, msg.size() - 8);
    } else if (proto == 'b') {
      s = ep.am_bcopy(kHelloAmId, pack_message, &msg).status();
    } else {
      uct::Iov iov{msg.data(), msg.size(), memh};
      s = ep.am_zcopy(kHelloAmId, nullptr, 0, &iov, 1, &comp);
    }
    if (s == Status::NoResource) iface.progress();
  }
  while (s == Status::InProgress && !done) iface.progress();
  return s == Status::InProgress ? comp.status : s;
}

}  // namespace

int main(int argc, char** argv) {
  if (ucs::is_error(ucs::log_init(argv[0]))) return 1;
  Options opt;
  int c;
  while ((c = getopt(argc, argv, "t:d:n:p:bzs:lh")) != -1) {
    switch (c) {
      case 't': opt.tls = ucs::config::split_list(optarg); break;
      case 'd': opt.devices = ucs::config::split_list(optarg); break;
      case 'n': opt.server = optarg; break;
      case 'p': opt.port = static_cast<uint16_t>(std::atoi(optarg)); break;
      case 'b': opt.proto = 'b'; break;
      case 'z': opt.proto = 'z'; break;
      case 's': opt.size = std::strtoul(optarg, nullptr, 10); break;
      case 'l': opt.loopback = true; break;
      default: return usage(argv[0]);
    }
  }
  if (opt.proto == 's' && opt.size < 8) opt.size = 8;  // am_short carries an 8-byte header

  // 1. The async context: background service for transports that need it.
  auto async = ucs::EventLoop::create();
  if (!async.ok() || is_error((*async)->start())) return 1;

  // 2. The transport with the lowest latency among those asked for.
  Choice choice;
  if (!find_lowest_latency(opt, &choice)) {
    std::fprintf(stderr, "no transport among those asked for is available (mc_info -m says why)\n");
    return 1;
  }
  std::printf("using %s/%s (%s)\n", choice.tl.tl_name.c_str(), choice.tl.dev_name.c_str(),
              opt.proto == 's' ? "short" : opt.proto == 'b' ? "bcopy" : "zcopy");
  ucs::config::Sources sources = ucs::config::Sources::from_process().value_or({});
  auto md = choice.component->md_open(choice.md_name, sources);
  if (!md.ok()) return 1;
  uct::IfaceParams params;
  params.tl_name = choice.tl.tl_name;
  params.dev_name = choice.tl.dev_name;
  params.async = async->get();
  auto iface = (*md)->iface_open(params);
  if (!iface.ok()) return 1;
  const uct::IfaceAttr attr = (*iface)->query();
  const size_t limit = opt.proto == 's' ? attr.am.max_short
                       : opt.proto == 'b' ? attr.am.max_bcopy
                                          : attr.am.max_zcopy;
  if (opt.size > limit) {
    std::fprintf(stderr, "message size %zu exceeds the transport's limit %zu for this protocol\n",
                 opt.size, limit);
    return 1;
  }

  // 3. The AM handler: checks the message and counts it.
  std::vector<uint8_t> message(opt.size);
  for (size_t i = 0; i < message.size(); ++i) message[i] = static_cast<uint8_t>('a' + i % 26);
  bool received = false, correct = false;
  (void)(*iface)->set_am_handler(kHelloAmId, [&](const void* data, size_t length, unsigned) {
    received = true;
    correct = length == message.size() && std::memcmp(data, message.data(), length) == 0;
    std::printf("received %zu bytes: %.*s%s\n", length, static_cast<int>(std::min<size_t>(length, 32)),
                static_cast<const char*>(data), length > 32 ? "..." : "");
    return Status::Ok;
  });

  // 4. Address exchange, and 5. the endpoint.
  std::vector<uint8_t> peer_dev = (*iface)->device_address();
  std::vector<uint8_t> peer_iface = (*iface)->iface_address();
  int sock = -1;
  if (!opt.loopback) {
    sock = exchange_socket(opt);
    if (sock < 0 || !send_blob(sock, peer_dev) || !send_blob(sock, peer_iface) ||
        !recv_blob(sock, &peer_dev) || !recv_blob(sock, &peer_iface)) {
      std::fprintf(stderr, "address exchange failed\n");
      return 1;
    }
  }
  std::string reason;
  if (!(*iface)->is_reachable(peer_dev, peer_iface, &reason)) {
    std::fprintf(stderr, "peer is unreachable over %s: %s\n", choice.tl.tl_name.c_str(),
                 reason.c_str());
    return 1;
  }
  auto ep = (*iface)->ep_create(peer_dev, peer_iface);
  if (!ep.ok()) {
    std::fprintf(stderr, "ep_create: %s\n", ucs::status_string(ep.status()));
    return 1;
  }

  // 6. The client (or the loopback process) sends; the server receives.
  int rc = 0;
  if (!opt.server.empty() || opt.loopback) {
    std::unique_ptr<uct::MemHandle> memh;
    if (opt.proto == 'z') memh = std::move(*(*md)->mem_reg(message.data(), message.size(), uct::kAccessLocal));
    const Status s = send_message(**iface, **ep, opt.proto, message, memh.get());
    if (s != Status::Ok) {
      std::fprintf(stderr, "send failed: %s\n", ucs::status_string(s));
      rc = 1;
    }
    bool flushed = false;
    uct::Completion comp;
    comp.arg = &flushed;
    comp.func = [](uct::Completion* c) { *static_cast<bool*>(c->arg) = true; };
    Status f = Status::NoResource;
    while ((f = (*ep)->flush(&comp)) == Status::NoResource) (*iface)->progress();
    while (f == Status::InProgress && !flushed) (*iface)->progress();
    std::printf("sent %zu bytes\n", message.size());
  }
  if (opt.server.empty() || opt.loopback) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!received && std::chrono::steady_clock::now() < deadline) (*iface)->progress();
    if (!received || !correct) {
      std::fprintf(stderr, "server: %s\n", received ? "message corrupted" : "no message in 30 s");
      rc = 1;
    }
  }
  // A last byte over the socket keeps the client alive until the server has the message.
  if (sock >= 0) {
    char byte = 0;
    if (opt.server.empty()) {
      (void)!write(sock, &byte, 1);
    } else {
      (void)!read(sock, &byte, 1);
    }
    close(sock);
  }

  // 7. Cleanup, in reverse order.
  ep->reset();
  iface->reset();
  md->reset();
  (void)(*async)->stop();
  std::printf("%s\n", rc == 0 ? "hello world: OK" : "hello world: FAILED");
  return rc;
}
