// SPDX-License-Identifier: Apache-2.0
// The vendor component and the module's entry symbol.
#include <uct/api/module.h>

#include "vendor_md.h"

// Only for the loader's refusal test: pretend to be built for another
// module ABI (make WRONG_ABI=99). Never set it in a real build.
#ifdef VENDOR_FORCE_ABI_VERSION
#undef MC_MODULE_ABI_VERSION
#define MC_MODULE_ABI_VERSION ((uint32_t)VENDOR_FORCE_ABI_VERSION)
#endif

namespace vendor {

class VendorComponent : public mc::uct::Component {
 public:
  const std::string& name() const override { return name_; }
  std::vector<std::string> md_names() const override { return {name_}; }

  Result<std::unique_ptr<mc::uct::MemoryDomain>> md_open(
      const std::string& md_name, const mc::ucs::config::Sources& sources) override {
    if (md_name != name_) return Status::NoElem;
    MC_ASSIGN_OR_RETURN(VendorConfig config,
                        mc::ucs::config::read_table<VendorConfig>(vendor_config_table(), sources));
    return std::unique_ptr<mc::uct::MemoryDomain>(new VendorMd(config));
  }

  void register_config(mc::ucs::config::Registry& registry) const override {
    registry.add<VendorConfig>(vendor_config_table());
  }

 private:
  const std::string name_ = "vendor";
};

}  // namespace vendor

MC_UCT_MODULE_DEFINE("vendor", "1.0", vendor::VendorComponent)
