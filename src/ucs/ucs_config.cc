// SPDX-License-Identifier: Apache-2.0
// The configuration tables of the UCS concerns, registered with the registry
// when it is first used.
#include "ucs/config/registry.h"
#include "ucs/log/log.h"
#include "ucs/module/module_loader.h"
#include "ucs/topo/topo.h"

namespace mc::ucs {

namespace {

/// MC_CONFIG_FILE is read by config::Sources itself; it is declared here so
/// that it is listed and documented like every other knob.
struct ConfigFileConfig {
  std::string file;
};

const config::Table& config_file_table() {
  static const config::Table table(
      "configuration files", "",
      {config::field("CONFIG_FILE", "",
                     "Extra configuration file of MC_NAME=value lines, read after "
                     "$sysconfdir/mc.conf and ~/.mc.conf; the environment overrides it.",
                     &ConfigFileConfig::file, config::string_parser())});
  return table;
}

}  // namespace

void register_ucs_config_tables(config::Registry& registry) {
  registry.add<ConfigFileConfig>(config_file_table());
  registry.add<LogConfig>(log_config_table());
  registry.add<ModuleConfig>(module_config_table());
  registry.add<TopoConfig>(topo_config_table());
}

}  // namespace mc::ucs
