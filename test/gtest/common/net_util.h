// SPDX-License-Identifier: Apache-2.0
// Network helpers of the multi-rail tests: the second network device of
// this machine, and cutting a rail by shutting down its sockets.
#pragma once

#include <arpa/inet.h>
#include <dirent.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdlib>
#include <string>

namespace mc::test {

/// The first up, non-loopback device with an IPv4 address: name and address.
inline bool second_device(std::string* name, in_addr* addr) {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return false;
  bool found = false;
  for (ifaddrs* ifa = list; ifa && !found; ifa = ifa->ifa_next) {
    if (!ifa->ifa_addr || ifa->ifa_addr->sa_family != AF_INET) continue;
    if (!(ifa->ifa_flags & IFF_UP) || !(ifa->ifa_flags & IFF_RUNNING)) continue;
    if (ifa->ifa_flags & IFF_LOOPBACK) continue;
    *name = ifa->ifa_name;
    *addr = reinterpret_cast<const sockaddr_in*>(ifa->ifa_addr)->sin_addr;
    found = true;
  }
  freeifaddrs(list);
  return found;
}

/// Calls `fn(fd)` on every connected IPv4 socket of this process bound to
/// `addr`.
template <typename Fn>
void for_sockets_on(in_addr addr, Fn fn) {
  DIR* dir = opendir("/proc/self/fd");
  if (!dir) return;
  while (dirent* e = readdir(dir)) {
    const int fd = std::atoi(e->d_name);
    if (fd <= 2 || fd == dirfd(dir)) continue;
    sockaddr_in local{}, peer{};
    socklen_t len = sizeof(local);
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) != 0) continue;
    if (local.sin_family != AF_INET || local.sin_addr.s_addr != addr.s_addr) continue;
    len = sizeof(peer);
    if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &len) != 0) continue;  // listening
    fn(fd);
  }
  closedir(dir);
}

/// Shuts down every connected IPv4 socket of this process bound to `addr`;
/// returns how many.
inline int cut_sockets_on(in_addr addr) {
  int cut = 0;
  for_sockets_on(addr, [&cut](int fd) { cut += shutdown(fd, SHUT_RDWR) == 0; });
  return cut;
}

}  // namespace mc::test
