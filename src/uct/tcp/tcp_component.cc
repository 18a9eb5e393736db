// SPDX-License-Identifier: Apache-2.0
// The tcp component and the module's entry symbol.
#include "uct/api/module.h"
#include "uct/tcp/tcp_md.h"

namespace mc::uct::tcp {

class TcpComponent : public Component {
 public:
  const std::string& name() const override { return name_; }
  std::vector<std::string> md_names() const override { return {name_}; }

  Result<std::unique_ptr<MemoryDomain>> md_open(const std::string& md_name,
                                                const ucs::config::Sources& sources) override {
    if (md_name != name_) return Status::NoElem;
    MC_ASSIGN_OR_RETURN(TcpConfig config,
                        ucs::config::read_table<TcpConfig>(tcp_config_table(), sources));
    return std::unique_ptr<MemoryDomain>(new TcpMd(std::move(config)));
  }

  void register_config(ucs::config::Registry& registry) const override {
    registry.add<TcpConfig>(tcp_config_table());
  }

 private:
  const std::string name_ = "tcp";
};

}  // namespace mc::uct::tcp

MC_UCT_MODULE_DEFINE("tcp", "1.0", mc::uct::tcp::TcpComponent)
