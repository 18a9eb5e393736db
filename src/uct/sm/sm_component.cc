// SPDX-License-Identifier: Apache-2.0
// The sm component and the module's entry symbol.
#include "uct/api/module.h"
#include "uct/sm/sm_config.h"
#include "uct/sm/sm_md.h"

namespace mc::uct::sm {

class SmComponent : public Component {
 public:
  const std::string& name() const override { return name_; }
  std::vector<std::string> md_names() const override { return {name_}; }

  Result<std::unique_ptr<MemoryDomain>> md_open(const std::string& md_name,
                                                const ucs::config::Sources& sources) override {
    if (md_name != name_) return Status::NoElem;
    MC_ASSIGN_OR_RETURN(SmConfig config, sm_config_read(sources));
    return std::unique_ptr<MemoryDomain>(new SmMd(config));
  }

  void register_config(ucs::config::Registry& registry) const override {
    registry.add<SmConfig>(sm_config_table());
  }

 private:
  const std::string name_ = "sm";
};

}  // namespace mc::uct::sm

MC_UCT_MODULE_DEFINE("sm", "1.0", mc::uct::sm::SmComponent)
