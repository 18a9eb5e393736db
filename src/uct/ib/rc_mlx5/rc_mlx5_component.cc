// SPDX-License-Identifier: Apache-2.0
// The rc_mlx5 component: the RC transport through mlx5 direct verbs, on
// devices that have them, and the module's entry symbol.
#include "uct/api/module.h"
#include "uct/ib/rc/rc_component.h"
#include "uct/ib/rc_mlx5/mlx5_iface.h"

namespace mc::uct::ib::mlx5 {

namespace {

constexpr rc::RcTransport kRcMlx5{"rc_mlx5", Mlx5Iface::create, true};

class RcMlx5Component : public rc::RcComponent {
 public:
  RcMlx5Component() : rc::RcComponent(kRcMlx5) {}
};

}  // namespace

}  // namespace mc::uct::ib::mlx5

MC_UCT_MODULE_DEFINE("rc_mlx5", "1.0", mc::uct::ib::mlx5::RcMlx5Component)
