// SPDX-License-Identifier: Apache-2.0
// Host identity, page sizes, CPU count, free ports.
#include "ucs/sys/sys.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <functional>
#include <random>

#include "ucs/log/log.h"

namespace mc::ucs {

namespace {

uint64_t ns_inode(const char* path) {
  struct stat st {};
  return stat(path, &st) == 0 ? static_cast<uint64_t>(st.st_ino) : 0;
}

std::string read_first_line(const char* path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

}  // namespace

bool HostIdentity::shares_memory_with(const HostIdentity& other) const {
  return boot_id == other.boot_id && ipc_ns == other.ipc_ns && mnt_ns == other.mnt_ns;
}

bool HostIdentity::shares_network_with(const HostIdentity& other) const {
  return boot_id == other.boot_id && net_ns == other.net_ns;
}

const HostIdentity& host_identity() {
  static const HostIdentity id = [] {
    HostIdentity h;
    char name[256] = {};
    if (gethostname(name, sizeof(name) - 1) == 0) h.hostname = name;
    for (char c : read_first_line("/proc/sys/kernel/random/boot_id")) {
      if (c != '-') h.boot_id += c;
    }
    if (h.boot_id.empty()) {
      MC_LOG(warn) << "cannot read /proc/sys/kernel/random/boot_id; same-host detection "
                      "falls back to the host name";
      h.boot_id = h.hostname;
    }
    h.net_ns = ns_inode("/proc/self/ns/net");
    h.ipc_ns = ns_inode("/proc/self/ns/ipc");
    h.mnt_ns = ns_inode("/proc/self/ns/mnt");
    return h;
  }();
  return id;
}

uint64_t boot_id_hash() {
  // FNV-1a: stable across processes and builds, unlike std::hash.
  uint64_t h = 1469598103934665603ull;
  for (char c : host_identity().boot_id) {
    h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  }
  return h;
}

uint64_t net_identity() {
  uint64_t h = boot_id_hash();
  const uint64_t ns = host_identity().net_ns;
  for (int i = 0; i < 8; ++i) h = (h ^ ((ns >> (8 * i)) & 0xff)) * 1099511628211ull;
  return h ? h : 1;
}

size_t page_size() {
  static const size_t size = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return size;
}

size_t huge_page_size() {
  static const size_t size = [] {
    std::ifstream in("/proc/meminfo");
    std::string key;
    size_t value = 0;
    std::string unit;
    while (in >> key >> value) {
      std::getline(in, unit);
      if (key == "Hugepagesize:") return value * 1024;
    }
    return size_t{0};
  }();
  return size;
}

unsigned cpu_count() {
  const long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<unsigned>(n) : 1;
}

namespace {

// Whether `port` (0: any) binds on 127.0.0.1 now; the bound port in *out.
bool try_bind_loopback(uint16_t port, uint16_t* out) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  socklen_t len = sizeof(addr);
  const bool ok = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
                  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  close(fd);
  if (ok) *out = ntohs(addr.sin_port);
  return ok;
}

}  // namespace

Result<uint16_t> find_free_tcp_port() {
  unsigned low = 32768;  // the kernel's default first ephemeral port
  if (FILE* f = std::fopen("/proc/sys/net/ipv4/ip_local_port_range", "r")) {
    unsigned lo = 0, hi = 0;
    if (std::fscanf(f, "%u %u", &lo, &hi) == 2 && lo > 0) low = lo;
    std::fclose(f);
  }
  constexpr unsigned kFirst = 20000;  // above the usual service ports
  if (low > kFirst + 1000) {
    static thread_local std::mt19937 rng(std::random_device{}());
    std::uniform_int_distribution<unsigned> pick(kFirst, low - 1);
    for (int attempt = 0; attempt < 64; ++attempt) {
      uint16_t port = 0;
      if (try_bind_loopback(static_cast<uint16_t>(pick(rng)), &port)) return port;
    }
  }
  uint16_t port = 0;
  if (!try_bind_loopback(0, &port)) {
    MC_LOG(error) << "cannot bind a free port on 127.0.0.1: " << errno_string(errno);
    return Status::IoError;
  }
  return port;
}

bool accept_retry_now(int err) {
  switch (err) {
    case EINTR:
    case ECONNABORTED:
    case EPROTO:
    case ENETDOWN:
    case ENOPROTOOPT:
    case EHOSTDOWN:
    case ENONET:
    case EHOSTUNREACH:
    case EOPNOTSUPP:
    case ENETUNREACH: return true;
    default: return false;
  }
}

std::string errno_string(int err) {
  char buf[256];
  // GNU strerror_r may return a static string instead of filling buf.
  const char* text = strerror_r(err, buf, sizeof(buf));
  return text;
}

void set_thread_name(const char* name) {
  char cut[16] = {};
  std::strncpy(cut, name, sizeof(cut) - 1);
  (void)pthread_setname_np(pthread_self(), cut);
}

uint64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

uint64_t coarse_monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace mc::ucs
