// SPDX-License-Identifier: Apache-2.0
// Topology from sysfs: NUMA nodes, NICs, GPUs, PCIe distances, NIC priorities.
#pragma once

#include <string>

#include "ucs/config/table.h"

namespace mc::ucs {

/// The knobs of topology discovery.
struct TopoConfig {
  std::string sysfs_root;  ///< "/sys" normally; a fixture tree in tests
};

const config::Table& topo_config_table();

}  // namespace mc::ucs
