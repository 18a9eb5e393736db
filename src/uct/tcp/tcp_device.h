// SPDX-License-Identifier: Apache-2.0
// Network devices for the tcp transport: which are up with an IPv4 address,
// and how fast they are (the performance model of IfaceAttr).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ucs/config/parser.h"
#include "ucs/status/status.h"

namespace mc::uct::tcp {

/// A device that is up and has an IPv4 address.
struct NetDevice {
  std::string name;
  uint32_t ipv4 = 0;  ///< network byte order
  bool loopback = false;
};

/// Devices that are up and have an IPv4 address (the first one of each
/// device), in getifaddrs() order, filtered by `allow`.
std::vector<NetDevice> list_devices(const ucs::config::AllowList& allow);

/// The device called `name`; NoDevice when it is absent, down or has no
/// IPv4 address (logged).
ucs::Result<NetDevice> find_device(const std::string& name);

/// Bandwidth (bytes/s) and one-way latency (s) of a device: from
/// /sys/class/net/<dev>/speed (Mb/s) when the kernel knows it, otherwise
/// (loopback, virtual devices) a loopback model of a few GB/s and ~10 us.
struct LinkModel {
  double bandwidth;
  double latency;
};
LinkModel link_model(const NetDevice& dev);

/// True for 127.0.0.0/8 (`ipv4` in network byte order).
bool is_loopback(uint32_t ipv4);

/// Dotted quad of `ipv4` (network byte order).
std::string ip_string(uint32_t ipv4);

}  // namespace mc::uct::tcp
