// SPDX-License-Identifier: Apache-2.0
// The configuration reference. A module's table comes from the module's own
// *_config.cc, compiled into mc_info too (it needs only ucs/config), so the
// reference does not depend on the optional libraries this build found; the
// module itself, when loaded, uses its own copy.
#include "info_reference.h"

#include <string>

#include "ucp/api/config.h"
#include "ucp/metadata/config.h"
#include "ucp/metadata/redis/redis_config.h"
#include "ucp/te/te_config.h"
#include "ucs/config/registry.h"
#include "uct/cuda/base/cuda_driver_config.h"
#include "uct/cuda/cuda_copy/cuda_copy_config.h"
#include "uct/cuda/cuda_ipc/cuda_ipc_config.h"
#include "uct/ib/base/ib_config.h"
#include "uct/ib/rc/rc_config.h"
#include "uct/nvmeof/nvmeof_config.h"
#include "uct/self/self_config.h"
#include "uct/sm/sm_config.h"
#include "uct/tcp/tcp_config.h"

namespace mc::info {

namespace {

using TableFn = const ucs::config::Table& (*)();

/// A table that a module reads.
struct ModuleTable {
  TableFn table;
  const char* modules;     ///< "the module `<file>`" or "the modules ..." that read it
  const char* built_when;  ///< when configure builds them; nullptr: always
};

constexpr const char* kVerbs =
    "configure finds rdma-core's verbs headers (`--with-verbs`; rc_mlx5 also needs "
    "mlx5dv.h, `--with-mlx5dv`)";
constexpr const char* kIbModules = "the modules `libmc_uct_rc_verbs.so` and `libmc_uct_rc_mlx5.so`";

constexpr const char* kCuda =
    "configure is not given `--without-cuda` (the CUDA toolkit is not needed: the driver is "
    "loaded at run time)";

constexpr ModuleTable kTransportTables[] = {
    {&uct::self::self_config_table, "the module `libmc_uct_self.so`", nullptr},
    {&uct::tcp::tcp_config_table, "the module `libmc_uct_tcp.so`", nullptr},
    {&uct::sm::sm_config_table, "the module `libmc_uct_sm.so`", nullptr},
    {&uct::ib::ib_config_table, kIbModules, kVerbs},
    {&uct::ib::rc::rc_config_table, kIbModules, kVerbs},
    {&uct::cuda::cuda_driver_config_table,
     "the modules `libmc_uct_cuda.so` and `libmc_uct_cuda_ipc.so`", kCuda},
    {&uct::cuda::cuda_copy_config_table, "the module `libmc_uct_cuda.so`", kCuda},
    {&uct::cuda::cuda_ipc_config_table, "the module `libmc_uct_cuda_ipc.so`", kCuda},
    {&uct::nvmeof::nvmeof_config_table, "the module `libmc_uct_nvmeof.so`",
     "configure finds liburing (`--with-liburing`)"},
};

constexpr ModuleTable kMetadataTables[] = {
    {&metadata::redis::redis_config_table, "the module `libmc_metadata_redis.so`",
     "configure finds hiredis (`--with-hiredis`)"},
};

void print_module(std::ostream& os, const ModuleTable& m) {
  std::string note = "Read by " + std::string(m.modules) + ", ";
  note += m.built_when ? "built when " + std::string(m.built_when) +
                             ". In a build without it, these variables are unknown."
                       : std::string("always built.");
  m.table().print_markdown(os, note);
}

}  // namespace

void print_config_reference(std::ostream& os) {
  // The registry holds the UCS tables from the start; nothing else is
  // registered here, so no module is loaded.
  for (const ucs::config::Table* t : ucs::config::Registry::instance().tables()) {
    t->print_markdown(os);
  }
  for (const ModuleTable& m : kTransportTables) print_module(os, m);
  ucp::context_config_table().print_markdown(os);
  metadata::metadata_config_table().print_markdown(os);
  for (const ModuleTable& m : kMetadataTables) print_module(os, m);
  te::te_config_table().print_markdown(os);
}

}  // namespace mc::info
