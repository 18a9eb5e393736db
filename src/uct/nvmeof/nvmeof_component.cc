// SPDX-License-Identifier: Apache-2.0
// The nvmeof component and the module's entry symbol.
#include "uct/api/module.h"
#include "uct/base/single_md_component.h"
#include "uct/nvmeof/nvmeof_md.h"

namespace mc::uct::nvmeof {

class NvmeofComponent : public SingleMdComponent<NvmeofConfig, NvmeofMd> {
 public:
  NvmeofComponent() : SingleMdComponent("nvmeof", nvmeof_config_table) {}
};

}  // namespace mc::uct::nvmeof

MC_UCT_MODULE_DEFINE("nvmeof", "1.0", mc::uct::nvmeof::NvmeofComponent)
