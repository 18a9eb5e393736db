// SPDX-License-Identifier: Apache-2.0
// The rc_verbs component: the RC transport through the verbs calls, and the
// module's entry symbol.
#include "uct/api/module.h"
#include "uct/ib/rc/rc_component.h"

namespace mc::uct::ib::rc {

namespace {

constexpr RcTransport kRcVerbs{"rc_verbs", RcIface::create, false};

class RcVerbsComponent : public RcComponent {
 public:
  RcVerbsComponent() : RcComponent(kRcVerbs) {}
};

}  // namespace

}  // namespace mc::uct::ib::rc

MC_UCT_MODULE_DEFINE("rc_verbs", "1.0", mc::uct::ib::rc::RcVerbsComponent)
