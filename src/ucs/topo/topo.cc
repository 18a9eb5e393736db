// SPDX-License-Identifier: Apache-2.0
// Topology discovery from sysfs.
#include "ucs/topo/topo.h"

namespace mc::ucs {

const config::Table& topo_config_table() {
  static const config::Table table(
      "topology", "TOPO_",
      {config::field("SYSFS_ROOT", "/sys",
                     "Root of the sysfs tree that topology is read from (a fixture tree in "
                     "tests).",
                     &TopoConfig::sysfs_root, config::string_parser())});
  return table;
}

}  // namespace mc::ucs
