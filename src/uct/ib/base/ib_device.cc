// SPDX-License-Identifier: Apache-2.0
// RDMA device discovery.
#include "uct/ib/base/ib_device.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "ucs/log/log.h"

namespace mc::uct::ib {

namespace {

std::string read_line(const std::string& path) {
  std::ifstream in(path);
  std::string s;
  std::getline(in, s);
  return s;
}

bool gid_is_zero(const ibv_gid& g) {
  for (uint8_t b : g.raw) {
    if (b) return false;
  }
  return true;
}

}  // namespace

double port_bandwidth(uint32_t active_speed, uint8_t active_width) {
  // Lane signalling rate in Gb/s and the line encoding (IB spec, PortInfo).
  double gbaud = 0, efficiency = 64.0 / 66.0;
  switch (active_speed) {
    case 1: gbaud = 2.5, efficiency = 0.8; break;   // SDR
    case 2: gbaud = 5.0, efficiency = 0.8; break;   // DDR
    case 4: gbaud = 10.0, efficiency = 0.8; break;  // QDR
    case 8: gbaud = 10.3125; break;                 // FDR10
    case 16: gbaud = 14.0625; break;                // FDR
    case 32: gbaud = 25.78125; break;               // EDR
    case 64: gbaud = 53.125; break;                 // HDR
    case 128: gbaud = 106.25; break;                // NDR
    case 256: gbaud = 212.5; break;                 // XDR
    default: return 0;
  }
  int lanes = 0;
  switch (active_width) {
    case 1: lanes = 1; break;
    case 2: lanes = 4; break;
    case 4: lanes = 8; break;
    case 8: lanes = 12; break;
    case 16: lanes = 2; break;
    default: return 0;
  }
  return gbaud * efficiency * lanes * 1e9 / 8;
}

size_t mtu_bytes(ibv_mtu mtu) {
  return mtu >= IBV_MTU_256 && mtu <= IBV_MTU_4096 ? size_t{128} << mtu : 0;
}

ibv_mtu mtu_from_bytes(size_t bytes) {
  int m = IBV_MTU_256;
  while (m < IBV_MTU_4096 && (size_t{128} << m) < bytes) ++m;
  return static_cast<ibv_mtu>(m);
}

IbDevice::~IbDevice() {
  if (pd_) ops_->dealloc_pd(pd_);
  if (context_) ops_->close_device(context_);
}

std::vector<std::unique_ptr<IbDevice>> IbDevice::open_all(const VerbsOps* ops,
                                                          const IbConfig& config,
                                                          std::string* why) {
  std::vector<std::unique_ptr<IbDevice>> out;
  int n = 0;
  ibv_device** list = ops->get_device_list(&n);
  if (!list) {
    *why = std::string("no RDMA devices: ibv_get_device_list: ") + std::strerror(errno);
    return out;
  }
  std::string skipped;
  for (int i = 0; i < n; ++i) {
    const std::string name = ops->get_device_name(list[i]);
    if (!config.devices.allows(name)) continue;
    std::unique_ptr<IbDevice> dev(new IbDevice(ops, name));
    dev->context_ = ops->open_device(list[i]);
    std::string reason;
    if (!dev->context_) {
      reason = std::string("ibv_open_device: ") + std::strerror(errno);
    } else if (!dev->setup(config, &reason)) {
    } else {
      out.push_back(std::move(dev));
      continue;
    }
    skipped += (skipped.empty() ? "" : "; ") + name + ": " + reason;
  }
  ops->free_device_list(list);
  if (out.empty()) {
    *why = n == 0 ? std::string("no RDMA devices: ") + ops->provider + " provider found none"
                  : "no RDMA devices: " + (skipped.empty() ? "none allowed by MC_IB_DEVICES"
                                                           : skipped);
  }
  return out;
}

bool IbDevice::setup(const IbConfig& config, std::string* why) {
  if (ops_->query_device(context_, &device_attr_) != 0) {
    *why = std::string("ibv_query_device: ") + std::strerror(errno);
    return false;
  }
  guid_ = device_attr_.node_guid;
  const int first = config.port ? static_cast<int>(*config.port) : 1;
  const int last = config.port ? first : device_attr_.phys_port_cnt;
  bool found = false;
  for (int p = first; p <= last && !found; ++p) {
    ibv_port_attr attr{};
    if (ops_->query_port(context_, static_cast<uint8_t>(p), &attr) != 0) continue;
    if (attr.state != IBV_PORT_ACTIVE) continue;
    port_ = static_cast<uint8_t>(p);
    port_attr_ = attr;
    found = true;
  }
  if (!found) {
    *why = config.port ? "port " + std::to_string(first) + " is not active (MC_IB_PORT)"
                       : "no active port";
    return false;
  }
  if (!select_gid(config, why)) return false;
  path_mtu_ = port_attr_.active_mtu;
  if (config.mtu && mtu_bytes(path_mtu_) > *config.mtu) path_mtu_ = mtu_from_bytes(*config.mtu);
  bandwidth_ = port_bandwidth(port_attr_.active_speed, port_attr_.active_width);
  pd_ = ops_->alloc_pd(context_);
  if (!pd_) {
    *why = std::string("ibv_alloc_pd: ") + std::strerror(errno);
    return false;
  }
  read_sysfs();
  return true;
}

bool IbDevice::select_gid(const IbConfig& config, std::string* why) {
  const std::string sys = "/sys/class/infiniband/" + name_ + "/ports/" + std::to_string(port_);
  auto gid_at = [this](int index, ibv_gid* g) {
    return ops_->query_gid(context_, port_, index, g) == 0 && !gid_is_zero(*g);
  };
  if (config.gid_index) {
    if (!gid_at(static_cast<int>(*config.gid_index), &gid_)) {
      *why = "MC_GID_INDEX=" + std::to_string(*config.gid_index) + " holds no GID";
      return false;
    }
    gid_index_ = static_cast<uint8_t>(*config.gid_index);
    return true;
  }
  if (!is_roce()) {  // InfiniBand: the port GID, routed by LID
    gid_index_ = 0;
    gid_at(0, &gid_);
    return true;
  }
  if (port_attr_.gid_tbl_len > 3 && gid_at(3, &gid_)) {
    gid_index_ = 3;
    return true;
  }
  for (int i = 0; i < port_attr_.gid_tbl_len; ++i) {
    if (read_line(sys + "/gid_attrs/types/" + std::to_string(i)) == "RoCE v2" && gid_at(i, &gid_)) {
      gid_index_ = static_cast<uint8_t>(i);
      return true;
    }
  }
  if (gid_at(0, &gid_)) {
    gid_index_ = 0;
    return true;
  }
  *why = "no GID on port " + std::to_string(port_);
  return false;
}

void IbDevice::read_sysfs() {
  namespace fs = std::filesystem;
  const std::string dev = "/sys/class/infiniband/" + name_ + "/device";
  const std::string numa = read_line(dev + "/numa_node");
  if (!numa.empty()) numa_node_ = std::atoi(numa.c_str());
  std::error_code ec;
  const fs::path target = fs::read_symlink(dev, ec);
  if (!ec) pci_ = target.filename().string();
  // A RoCE LAG device's GID points at a bond netdev.
  const std::string ndev = read_line("/sys/class/infiniband/" + name_ + "/ports/" +
                                     std::to_string(port_) + "/gid_attrs/ndevs/" +
                                     std::to_string(gid_index_));
  bonded_ = !ndev.empty() && fs::exists("/sys/class/net/" + ndev + "/bonding", ec);
  MC_LOG(debug) << "ib: " << tl_dev_name() << " guid 0x" << std::hex << guid_ << std::dec
                << " gid index " << int(gid_index_) << " mtu " << mtu_bytes(path_mtu_)
                << " bandwidth " << bandwidth_ / 1e9 << " GB/s numa " << numa_node_ << " pci '"
                << pci_ << "'" << (bonded_ ? " (bonded)" : "");
}

}  // namespace mc::uct::ib
