// SPDX-License-Identifier: Apache-2.0
// Network device discovery (getifaddrs) and the link model (sysfs speed).
#include "uct/tcp/tcp_device.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>

#include <cerrno>
#include <fstream>

#include "ucs/log/log.h"
#include "ucs/sys/sys.h"

namespace mc::uct::tcp {

namespace {

// Loopback and devices without a known speed: memcpy through the kernel.
constexpr double kLoopbackBandwidth = 4.0e9;
constexpr double kLoopbackLatency = 10e-6;
// A real NIC: wire latency plus two kernel stacks.
constexpr double kNicLatency = 25e-6;

std::vector<NetDevice> all_devices() {
  std::vector<NetDevice> devices;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) {
    MC_LOG(error) << "tcp: getifaddrs() failed: " << ucs::errno_string(errno);
    return devices;
  }
  for (ifaddrs* ifa = list; ifa; ifa = ifa->ifa_next) {
    if (!ifa->ifa_addr || ifa->ifa_addr->sa_family != AF_INET) continue;
    if (!(ifa->ifa_flags & IFF_UP) || !(ifa->ifa_flags & IFF_RUNNING)) continue;
    bool seen = false;
    for (const NetDevice& d : devices) seen = seen || d.name == ifa->ifa_name;
    if (seen) continue;  // one iface per device: its first IPv4 address
    NetDevice dev;
    dev.name = ifa->ifa_name;
    dev.ipv4 = reinterpret_cast<const sockaddr_in*>(ifa->ifa_addr)->sin_addr.s_addr;
    dev.loopback = (ifa->ifa_flags & IFF_LOOPBACK) != 0 || is_loopback(dev.ipv4);
    devices.push_back(std::move(dev));
  }
  freeifaddrs(list);
  return devices;
}

}  // namespace

bool is_loopback(uint32_t ipv4) {
  return (ntohl(ipv4) >> 24) == 127;
}

std::string ip_string(uint32_t ipv4) {
  char buf[INET_ADDRSTRLEN] = {};
  in_addr a{};
  a.s_addr = ipv4;
  inet_ntop(AF_INET, &a, buf, sizeof(buf));
  return buf;
}

std::vector<NetDevice> list_devices(const ucs::config::AllowList& allow) {
  std::vector<NetDevice> out;
  for (NetDevice& d : all_devices()) {
    if (allow.allows(d.name)) out.push_back(std::move(d));
  }
  if (out.empty()) {
    MC_LOG_ONCE(warn) << "tcp: no network device is up with an IPv4 address";
  }
  return out;
}

ucs::Result<NetDevice> find_device(const std::string& name) {
  for (NetDevice& d : all_devices()) {
    if (d.name == name) return std::move(d);
  }
  MC_LOG(error) << "tcp: device '" << name << "' is absent, down, or has no IPv4 address";
  return ucs::Status::NoDevice;
}

LinkModel link_model(const NetDevice& dev) {
  LinkModel model{kLoopbackBandwidth, kLoopbackLatency};
  if (dev.loopback) return model;
  std::ifstream in("/sys/class/net/" + dev.name + "/speed");
  long mbps = -1;
  // Reading "speed" fails with EINVAL for devices without a link speed.
  if (in >> mbps && mbps > 0) {
    model.bandwidth = static_cast<double>(mbps) * 1e6 / 8;
    model.latency = kNicLatency;
  }
  return model;
}

}  // namespace mc::uct::tcp
