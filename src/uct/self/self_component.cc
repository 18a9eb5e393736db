// SPDX-License-Identifier: Apache-2.0
// The self component and the module's entry symbol.
#include "uct/api/module.h"
#include "uct/base/single_md_component.h"
#include "uct/self/self_md.h"

namespace mc::uct::self {

class SelfComponent : public SingleMdComponent<SelfConfig, SelfMd> {
 public:
  SelfComponent() : SingleMdComponent("self", self_config_table) {}
};

}  // namespace mc::uct::self

MC_UCT_MODULE_DEFINE("self", "1.0", mc::uct::self::SelfComponent)
