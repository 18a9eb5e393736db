// SPDX-License-Identifier: Apache-2.0
// Topology from sysfs: NUMA nodes, NICs, GPUs, PCIe distances, and the NIC
// priority matrix (preferred / secondary NICs per memory location).
#pragma once

#include <map>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "ucs/config/sources.h"
#include "ucs/config/table.h"
#include "ucs/status/status.h"

namespace mc::ucs {

/// How far apart two devices are on the I/O fabric, closest first; the order
/// is the ranking the priority matrix uses.
enum class PciDistance {
  SameDevice,       ///< the same PCI device (any of its functions)
  SamePcieSwitch,   ///< share a PCIe bridge: traffic need not reach the host bridge
  SameRootComplex,  ///< same host bridge (pciDDDD:BB), different root ports
  SameNuma,         ///< different host bridges on one NUMA node
  CrossSocket,      ///< on different NUMA nodes
  Unknown,          ///< no PCI path and no NUMA node to compare
};

/// "same-device", "same-pcie-switch", "same-root-complex", "same-numa",
/// "cross-socket", "unknown". Never null.
const char* pci_distance_name(PciDistance distance);

/// A NUMA node and the CPUs it holds (sorted, possibly empty).
struct NumaNode {
  int id = 0;
  std::vector<int> cpus;
};

enum class DeviceKind { Rdma, Net, Gpu };

/// "rdma", "net", "gpu".
const char* device_kind_name(DeviceKind kind);

/// A NIC or a GPU as sysfs shows it.
struct TopoDevice {
  std::string name;  ///< "mlx5_0", "eth0", "cuda:0"
  DeviceKind kind = DeviceKind::Net;
  std::string pci_addr;     ///< "0000:04:00.0", the nearest PCI function; empty when none
  std::string sysfs_path;   ///< the resolved device directory, relative to the sysfs
                            ///< root ("devices/pci0000:00/0000:00:01.0/..."); empty when virtual
  int numa_node = -1;       ///< -1: unknown
  std::string netdev;       ///< RDMA only: the netdev it maps to; empty when not found
  bool is_virtual = false;  ///< no `device` link (veth, bridge, rxe, ...)
};

/// The NICs to use for one memory location, best first.
struct PriorityEntry {
  std::vector<std::string> preferred;
  std::vector<std::string> secondary;
  bool operator==(const PriorityEntry&) const = default;
};

/// Location ("cpu:N" for NUMA node N, "cuda:N" for GPU N) -> its NICs.
using PriorityMatrix = std::map<std::string, PriorityEntry>;

/// Parses a kernel CPU list such as "0-3,8-11" (blanks and a trailing newline
/// allowed; empty text is an empty list) into sorted, unique CPU numbers.
/// Returns InvalidParam for anything else ("3-1", "1-", "a", ",").
Result<std::vector<int>> parse_cpu_list(std::string_view text);

/// The inverse of parse_cpu_list: {0,1,2,3,8} -> "0-3,8".
std::string format_cpu_list(const std::vector<int>& cpus);

/// Parses the MC_TOPO_PRIORITY_MATRIX syntax:
///   LOCATION=NIC[,NIC...][|NIC[,NIC...]][;LOCATION=...]
/// where LOCATION is cpu:N or cuda:N, the NICs before '|' are preferred and
/// those after it secondary (none when there is no '|'). Empty text is an
/// empty matrix. On error returns InvalidParam and, when given, sets `*error`
/// to a sentence naming the offending part.
Result<PriorityMatrix> parse_priority_matrix(std::string_view text, std::string* error = nullptr);

/// The inverse of parse_priority_matrix.
std::string format_priority_matrix(const PriorityMatrix& matrix);

/// The Mooncake Transfer Engine form:
/// {"cpu:0": [["mlx5_0"], ["mlx5_1"]], "cuda:0": [["mlx5_0"], ["mlx5_1"]]}
std::string priority_matrix_to_json(const PriorityMatrix& matrix);

/// The knobs of topology discovery.
struct TopoConfig {
  std::string sysfs_root;          ///< "/sys" normally; a fixture tree in tests
  PriorityMatrix priority_matrix;  ///< user override; entries replace discovered ones
};

const config::Table& topo_config_table();

/// What sysfs says about this machine's CPUs, NICs and GPUs. Discovery reads
/// everything once; the accessors are const and thread-safe.
class Topology {
 public:
  /// Reads `sysfs_root`. `priority_override` entries replace the discovered
  /// entries of the same location, and may add locations. Returns
  /// InvalidParam (logged) when the root is not a directory or the override
  /// names a NIC that was not discovered. Unreadable files degrade: an
  /// unknown NUMA node is -1, an unparsable cpulist an empty CPU list.
  static Result<Topology> discover(const std::string& sysfs_root,
                                   PriorityMatrix priority_override = {});
  /// From MC_TOPO_SYSFS_ROOT and MC_TOPO_PRIORITY_MATRIX.
  static Result<Topology> discover(const TopoConfig& config);
  /// Reads the topology table from `sources`; InvalidParam on a bad value.
  static Result<Topology> discover(const config::Sources& sources);
  /// From this process's environment and config files.
  static Result<Topology> discover();

  /// The root it was read from, as given.
  const std::string& sysfs_root() const { return root_; }
  /// Sorted by id; at least one node (node 0 with every online CPU when
  /// sysfs has no node directories).
  const std::vector<NumaNode>& numa_nodes() const { return numa_nodes_; }
  /// class/infiniband/*, sorted by name.
  const std::vector<TopoDevice>& rdma_devices() const { return rdma_; }
  /// class/net/* except lo, sorted by name; virtual ones are flagged.
  const std::vector<TopoDevice>& net_devices() const { return net_; }
  /// The NICs the priority matrix ranks: every RDMA device when there is one,
  /// else the netdevs on PCI.
  const std::vector<TopoDevice>& nics() const { return nics_; }
  /// NVIDIA display and 3D controllers, named cuda:0.. in PCI address order.
  const std::vector<TopoDevice>& gpus() const { return gpus_; }

  /// The RDMA device, netdev or GPU of that name, or null.
  const TopoDevice* find(std::string_view name) const;

  /// Compares the PCI paths of two devices, then their NUMA nodes.
  static PciDistance distance(const TopoDevice& a, const TopoDevice& b);

  /// The node holding `cpu`, or -1.
  int numa_node_of_cpu(int cpu) const;

  /// cpu:N: the NICs on node N preferred; cuda:N: the NICs at the smallest
  /// PCIe distance preferred; every other NIC secondary. Then the override.
  PriorityMatrix priority_matrix() const;
  std::string priority_matrix_json() const { return priority_matrix_to_json(priority_matrix()); }
  /// `names` followed by the netdev of each RDMA device among them (when
  /// known and not listed): a lane over that netdev (tcp) is that NIC.
  std::vector<std::string> with_netdevs(const std::vector<std::string>& names) const;

  /// Human-readable report (mc_info -T).
  void print(std::ostream& os) const;

 private:
  Topology() = default;
  void read_numa_nodes();
  void read_rdma_devices();
  void read_net_devices();
  void read_gpus();
  TopoDevice read_device(const std::string& class_dir, const std::string& name,
                         DeviceKind kind) const;
  int device_numa_node(const std::string& pci_dir) const;
  Status check_override() const;

  std::string root_;
  std::string canonical_root_;
  std::vector<NumaNode> numa_nodes_;
  std::vector<TopoDevice> rdma_;
  std::vector<TopoDevice> net_;
  std::vector<TopoDevice> nics_;
  std::vector<TopoDevice> gpus_;
  PriorityMatrix override_;
};

}  // namespace mc::ucs
