// SPDX-License-Identifier: Apache-2.0
// The tcp component and the module's entry symbol.
#include "uct/api/module.h"
#include "uct/base/single_md_component.h"
#include "uct/tcp/tcp_md.h"

namespace mc::uct::tcp {

class TcpComponent : public SingleMdComponent<TcpConfig, TcpMd> {
 public:
  TcpComponent() : SingleMdComponent("tcp", tcp_config_table) {}
};

}  // namespace mc::uct::tcp

MC_UCT_MODULE_DEFINE("tcp", "1.0", mc::uct::tcp::TcpComponent)
