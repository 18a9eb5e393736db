// SPDX-License-Identifier: Apache-2.0
// An opened RDMA device: its context and protection domain, the port and GID
// chosen by the configuration, the bandwidth of the port, and where it sits
// (NUMA node, PCI address, bond).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "uct/ib/base/ib_config.h"
#include "uct/ib/base/ib_verbs.h"

namespace mc::uct::ib {

/// Data rate of a port in bytes per second: lane signalling rate
/// (active_speed) x lanes (active_width) x line-encoding efficiency. 0 for
/// codes the IB spec does not define.
double port_bandwidth(uint32_t active_speed, uint8_t active_width);

/// Path MTU in bytes of an ibv_mtu (256 for IBV_MTU_256, ...); 0 when invalid.
size_t mtu_bytes(ibv_mtu mtu);
/// The ibv_mtu of `bytes` (a power of two in [256, 4096]).
ibv_mtu mtu_from_bytes(size_t bytes);

class IbDevice {
 public:
  ~IbDevice();
  IbDevice(const IbDevice&) = delete;
  IbDevice& operator=(const IbDevice&) = delete;

  /// Opens every device `config` allows with an active port. The list is
  /// empty with `why` set ("no RDMA devices: ...") when none qualifies.
  static std::vector<std::unique_ptr<IbDevice>> open_all(const VerbsOps* ops,
                                                        const IbConfig& config,
                                                        std::string* why);

  const VerbsOps& ops() const { return *ops_; }
  const std::string& name() const { return name_; }
  /// "mlx5_0:1"
  std::string tl_dev_name() const { return name_ + ":" + std::to_string(port_); }
  ibv_context* context() const { return context_; }
  ibv_pd* pd() const { return pd_; }
  uint8_t port() const { return port_; }
  uint64_t guid() const { return guid_; }
  const ibv_port_attr& port_attr() const { return port_attr_; }
  const ibv_device_attr& device_attr() const { return device_attr_; }
  bool is_roce() const { return port_attr_.link_layer == IBV_LINK_LAYER_ETHERNET; }
  const ibv_gid& gid() const { return gid_; }
  uint8_t gid_index() const { return gid_index_; }
  ibv_mtu path_mtu() const { return path_mtu_; }
  double bandwidth() const { return bandwidth_; }
  int numa_node() const { return numa_node_; }
  const std::string& pci_address() const { return pci_; }
  bool bonded() const { return bonded_; }

 private:
  IbDevice(const VerbsOps* ops, std::string name) : ops_(ops), name_(std::move(name)) {}
  /// Queries the port, selects the GID and MTU; false with `why` when unusable.
  bool setup(const IbConfig& config, std::string* why);
  bool select_gid(const IbConfig& config, std::string* why);
  void read_sysfs();

  const VerbsOps* ops_;
  std::string name_;
  ibv_context* context_ = nullptr;
  ibv_pd* pd_ = nullptr;
  uint8_t port_ = 1;
  uint64_t guid_ = 0;
  ibv_device_attr device_attr_{};
  ibv_port_attr port_attr_{};
  ibv_gid gid_{};
  uint8_t gid_index_ = 0;
  ibv_mtu path_mtu_ = IBV_MTU_1024;
  double bandwidth_ = 0;
  int numa_node_ = -1;
  std::string pci_;
  bool bonded_ = false;
};

}  // namespace mc::uct::ib
