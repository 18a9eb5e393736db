// SPDX-License-Identifier: Apache-2.0
// UCP between two processes: worker addresses, the server's buffer address
// and packed rkey go over a TCP socket; the client puts into the server's
// buffer, gets it back (checked), and sends an active message the server
// checks. UCP picks the transport unless -t names some (MC_TLS).
//
//   server:  ucp_client_server [-t tcp] [-p 13338] [-s 65536]
//   client:  ucp_client_server [-t tcp] [-p 13338] [-s 65536] -n 127.0.0.1
#include <arpa/inet.h>
#include <getopt.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "ucp/api/ucp.h"
#include "ucs/log/log.h"

namespace {

using namespace mc;
using ucs::Status;

constexpr uint16_t kAmId = 1;

struct Options {
  std::string tls;     // empty: MC_TLS from the environment
  std::string server;  // empty: be the server
  uint16_t port = 13338;
  size_t size = 65536;
};

int usage(const char* prog) {
  std::fprintf(stderr,
               "usage: %s [-t tls] [-n server] [-p port] [-s size]\n"
               "  -t  transports, as MC_TLS (default: MC_TLS or every transport)\n"
               "  -n  server IPv4 address: act as the client (default: act as the server)\n"
               "  -p  TCP port for the address exchange (default 13338)\n"
               "  -s  buffer and message size in bytes (default 65536)\n",
               prog);
  return 2;
}

uint8_t pattern(size_t i, unsigned seed) {
  return static_cast<uint8_t>(i * 13 + seed);
}

std::vector<uint8_t> filled(size_t n, unsigned seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = pattern(i, seed);
  return v;
}

// The process's configuration with MC_TLS replaced by `-t`, if given.
ucs::Result<std::unique_ptr<ucp::Context>> make_context(const Options& opt) {
  std::string error;
  ucs::Result<ucs::config::Sources> sources = ucs::config::Sources::from_process(&error);
  if (!sources.ok()) {
    std::fprintf(stderr, "configuration: %s\n", error.c_str());
    return sources.status();
  }
  ucp::register_ucp_config_tables(ucs::config::Registry::instance());
  MC_ASSIGN_OR_RETURN(ucp::ContextConfig config, ucs::config::read_table<ucp::ContextConfig>(
                                                     ucp::context_config_table(), *sources));
  if (!opt.tls.empty()) {
    MC_RETURN_IF_ERROR(ucs::config::allow_list_parser().parse(opt.tls, &config.tls));
  }
  ucp::ContextParams params;
  params.sources = &*sources;
  params.config = config;
  return ucp::Context::create(params);
}

// Address exchange: one TCP connection, length-prefixed blobs.
int connect_socket(const Options& opt) {
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

bool write_all(int fd, const void* p, size_t n) {
  const auto* b = static_cast<const uint8_t*>(p);
  while (n > 0) {
    const ssize_t w = write(fd, b, n);
    if (w <= 0) return false;
    b += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

bool read_all(int fd, void* p, size_t n) {
  auto* b = static_cast<uint8_t*>(p);
  while (n > 0) {
    const ssize_t r = read(fd, b, n);
    if (r <= 0) return false;
    b += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

// Wire format of a blob: uint32 length (host order: both ends are on one
// machine or alike), then the bytes.
bool send_blob(int fd, const std::vector<uint8_t>& b) {
  const uint32_t n = static_cast<uint32_t>(b.size());
  return write_all(fd, &n, 4) && write_all(fd, b.data(), n);
}

bool recv_blob(int fd, std::vector<uint8_t>* b) {
  uint32_t n = 0;
  if (!read_all(fd, &n, 4) || n > (1u << 20)) return false;
  b->resize(n);
  return read_all(fd, b->data(), n);
}

// True once `fd` has a byte to read (0 ms poll).
bool readable(int fd) {
  pollfd p{fd, POLLIN, 0};
  return poll(&p, 1, 0) > 0;
}

// Reports a failed step; returns the exit status.
int fail(const char* what, Status status) {
  std::fprintf(stderr, "%s: %s\n", what, ucs::status_string(status));
  return 1;
}

Status wait(ucs::Result<std::shared_ptr<ucp::Request>> r) {
  if (!r.ok()) return r.status();
  return (*r)->wait();
}

int run_server(const Options& opt, ucp::Context& ctx, ucp::Worker& worker) {
  std::vector<uint8_t> buffer(opt.size, 0);
  auto memh = ucp::MemHandle::map(ctx, buffer.data(), buffer.size());
  if (!memh.ok()) return fail("mem_map", memh.status());
  auto rkey = (*memh)->rkey_pack();
  if (!rkey.ok()) return fail("rkey_pack", rkey.status());
  std::vector<uint8_t> am_received;
  bool am_arrived = false;
  worker.set_am_handler(kAmId, [&](const void* data, size_t length) {
    const auto* p = static_cast<const uint8_t*>(data);
    am_received.assign(p, p + length);
    am_arrived = true;
  });

  const int fd = connect_socket(opt);
  if (fd < 0) return 1;
  const uint64_t remote_addr = reinterpret_cast<uintptr_t>(buffer.data());
  std::vector<uint8_t> addr_blob(8), peer;
  std::memcpy(addr_blob.data(), &remote_addr, 8);
  if (!send_blob(fd, worker.address()) || !send_blob(fd, addr_blob) || !send_blob(fd, *rkey) ||
      !recv_blob(fd, &peer)) {
    std::fprintf(stderr, "server: address exchange failed\n");
    return 1;
  }
  std::printf("server: client address %zu bytes\n", peer.size());
  // The client says when it is done with one byte; progress until then.
  while (!readable(fd)) worker.progress();
  uint8_t done = 0;
  if (!read_all(fd, &done, 1) || done != 1) return fail("server: done byte", Status::IoError);
  for (int i = 0; i < 1000000 && !am_arrived; ++i) worker.progress();
  const bool put_ok = buffer == filled(opt.size, 1);
  const bool am_ok = am_arrived && am_received == filled(opt.size, 2);
  std::printf("server: put data %s, active message %s\n", put_ok ? "ok" : "WRONG",
              am_ok ? "ok" : (am_arrived ? "WRONG" : "MISSING"));
  const uint8_t verdict = put_ok && am_ok;
  write_all(fd, &verdict, 1);
  close(fd);
  return verdict ? 0 : 1;
}

int run_client(const Options& opt, ucp::Worker& worker) {
  const int fd = connect_socket(opt);
  if (fd < 0) return 1;
  std::vector<uint8_t> server_address, addr_blob, packed_rkey;
  if (!recv_blob(fd, &server_address) || !recv_blob(fd, &addr_blob) || addr_blob.size() != 8 ||
      !recv_blob(fd, &packed_rkey) || !send_blob(fd, worker.address())) {
    std::fprintf(stderr, "client: address exchange failed\n");
    return 1;
  }
  uint64_t remote_addr = 0;
  std::memcpy(&remote_addr, addr_blob.data(), 8);
  auto ep = worker.ep_create(server_address);
  if (!ep.ok()) return fail("ep_create", ep.status());
  std::ostringstream lanes;
  (*ep)->print(lanes);
  std::printf("client: endpoint to the server:\n%s", lanes.str().c_str());
  auto rkey = (*ep)->rkey_unpack(packed_rkey);
  if (!rkey.ok()) return fail("rkey_unpack", rkey.status());

  const std::vector<uint8_t> out = filled(opt.size, 1);
  Status s = wait((*ep)->put_nbx(out.data(), out.size(), remote_addr, **rkey));
  if (s == Status::Ok) s = wait((*ep)->flush());
  std::printf("client: put of %zu bytes: %s\n", opt.size, ucs::status_string(s));
  std::vector<uint8_t> back(opt.size, 0);
  if (s == Status::Ok) s = wait((*ep)->get_nbx(back.data(), back.size(), remote_addr, **rkey));
  const bool get_ok = s == Status::Ok && back == out;
  std::printf("client: get of %zu bytes: %s, data %s\n", opt.size, ucs::status_string(s),
              get_ok ? "ok" : "WRONG");
  const std::vector<uint8_t> msg = filled(opt.size, 2);
  Status am = wait((*ep)->am_send_nbx(kAmId, msg.data(), msg.size()));
  if (am == Status::Ok) am = wait((*ep)->flush());
  std::printf("client: active message of %zu bytes: %s\n", opt.size, ucs::status_string(am));

  const uint8_t done = 1;
  uint8_t verdict = 0;
  if (!write_all(fd, &done, 1) || !read_all(fd, &verdict, 1)) verdict = 0;
  std::printf("client: server says %s\n", verdict ? "ok" : "FAILED");
  close(fd);
  (void)wait((*ep)->close(ucp::CloseMode::Force));
  return get_ok && am == Status::Ok && verdict ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (ucs::is_error(ucs::log_init(argv[0]))) return 1;
  Options opt;
  int c;
  while ((c = getopt(argc, argv, "t:n:p:s:h")) != -1) {
    switch (c) {
      case 't': opt.tls = optarg; break;
      case 'n': opt.server = optarg; break;
      case 'p': opt.port = static_cast<uint16_t>(std::atoi(optarg)); break;
      case 's': opt.size = std::strtoul(optarg, nullptr, 10); break;
      default: return usage(argv[0]);
    }
  }
  if (optind < argc || opt.size == 0) return usage(argv[0]);
  auto ctx = make_context(opt);
  if (!ctx.ok()) return fail("context", ctx.status());
  auto worker = ucp::Worker::create(**ctx);
  if (!worker.ok()) {
    return fail("worker", worker.status());
  }
  const int rc = opt.server.empty() ? run_server(opt, **ctx, **worker) : run_client(opt, **worker);
  std::printf("%s: %s\n", opt.server.empty() ? "server" : "client", rc == 0 ? "PASS" : "FAIL");
  return rc;
}
