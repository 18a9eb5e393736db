// SPDX-License-Identifier: Apache-2.0
// The sm component and the module's entry symbol.
#include "uct/api/module.h"
#include "uct/base/single_md_component.h"
#include "uct/sm/sm_config.h"
#include "uct/sm/sm_md.h"

namespace mc::uct::sm {

class SmComponent : public SingleMdComponent<SmConfig, SmMd> {
 public:
  SmComponent() : SingleMdComponent("sm", sm_config_table, sm_config_read) {}
};

}  // namespace mc::uct::sm

MC_UCT_MODULE_DEFINE("sm", "1.0", mc::uct::sm::SmComponent)
