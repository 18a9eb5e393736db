// SPDX-License-Identifier: Apache-2.0
// The rc_verbs component, its memory domain and the module's entry symbol.
#include "ucs/log/log.h"
#include "uct/api/module.h"
#include "uct/ib/base/ib_md.h"
#include "uct/ib/rc_verbs/rc_config.h"
#include "uct/ib/rc_verbs/rc_iface.h"

namespace mc::uct::ib::rc {

namespace {

constexpr const char* kName = "rc_verbs";

class RcVerbsMd : public IbMd {
 public:
  RcVerbsMd(const VerbsOps* ops, const IbConfig& ib, const RcConfig& rc, std::string why)
      : IbMd(kName, ops, ib, std::move(why)), rc_(rc) {}

  const char* tl_name() const override { return kName; }

  Result<std::unique_ptr<Iface>> iface_open(const IfaceParams& params) override {
    const int dev = find_device(params.dev_name);
    if (dev < 0) {
      MC_LOG(error) << "rc_verbs: no device '" << params.dev_name << "'";
      return Status::NoDevice;
    }
    MC_ASSIGN_OR_RETURN(std::unique_ptr<RcIface> iface,
                        RcIface::create(this, static_cast<size_t>(dev), rc_, params));
    return std::unique_ptr<Iface>(std::move(iface));
  }

 private:
  RcConfig rc_;
};

class RcVerbsComponent : public Component {
 public:
  const std::string& name() const override { return name_; }

  // The md exists only where a device does, so mc_info and UCP see the
  // reason instead of an empty md.
  std::vector<std::string> md_names() const override {
    ucs::config::Sources sources = ucs::config::Sources::from_process().value_or({});
    Result<std::unique_ptr<MemoryDomain>> md =
        const_cast<RcVerbsComponent*>(this)->open(sources, &why_);
    if (!md.ok() || (*md)->query_tl_resources().empty()) return {};
    return {name_};
  }

  std::string unavailable_reason() const override { return why_; }

  Result<std::unique_ptr<MemoryDomain>> md_open(const std::string& md_name,
                                                const ucs::config::Sources& sources) override {
    if (md_name != name_) return Status::NoElem;
    std::string why;
    MC_ASSIGN_OR_RETURN(std::unique_ptr<MemoryDomain> md, open(sources, &why));
    // With these sources (another provider, other devices) nothing is left.
    if (md->query_tl_resources().empty()) return Status::NoDevice;
    return md;
  }

  void register_config(ucs::config::Registry& registry) const override {
    registry.add<IbConfig>(ib_config_table());
    registry.add<RcConfig>(rc_config_table());
  }

 private:
  Result<std::unique_ptr<MemoryDomain>> open(const ucs::config::Sources& sources,
                                             std::string* why) {
    MC_ASSIGN_OR_RETURN(IbConfig ib, ucs::config::read_table<IbConfig>(ib_config_table(), sources));
    MC_ASSIGN_OR_RETURN(RcConfig rc, ucs::config::read_table<RcConfig>(rc_config_table(), sources));
    std::string reason;
    Result<const VerbsOps*> ops = verbs_ops_for(ib, &reason);
    auto md = std::make_unique<RcVerbsMd>(ops.ok() ? *ops : nullptr, ib, rc,
                                          ops.ok() ? "" : "no RDMA devices: " + reason);
    *why = md->no_device_reason();
    return std::unique_ptr<MemoryDomain>(std::move(md));
  }

  const std::string name_ = kName;
  mutable std::string why_;
};

}  // namespace

}  // namespace mc::uct::ib::rc

MC_UCT_MODULE_DEFINE("rc_verbs", "1.0", mc::uct::ib::rc::RcVerbsComponent)
