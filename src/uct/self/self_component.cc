// SPDX-License-Identifier: Apache-2.0
// The self component and the module's entry symbol.
#include "uct/api/module.h"
#include "uct/self/self_md.h"

namespace mc::uct::self {

class SelfComponent : public Component {
 public:
  const std::string& name() const override { return name_; }
  std::vector<std::string> md_names() const override { return {name_}; }

  Result<std::unique_ptr<MemoryDomain>> md_open(const std::string& md_name,
                                                const ucs::config::Sources& sources) override {
    if (md_name != name_) return Status::NoElem;
    MC_ASSIGN_OR_RETURN(SelfConfig config,
                        ucs::config::read_table<SelfConfig>(self_config_table(), sources));
    return std::unique_ptr<MemoryDomain>(new SelfMd(config));
  }

  void register_config(ucs::config::Registry& registry) const override {
    registry.add<SelfConfig>(self_config_table());
  }

 private:
  const std::string name_ = "self";
};

}  // namespace mc::uct::self

MC_UCT_MODULE_DEFINE("self", "1.0", mc::uct::self::SelfComponent)
