// SPDX-License-Identifier: Apache-2.0
// The RC component and memory domain.
#include "uct/ib/rc/rc_component.h"

#include "ucs/config/registry.h"
#include "ucs/log/log.h"

namespace mc::uct::ib::rc {

namespace {

class RcMd : public IbMd {
 public:
  RcMd(const RcTransport& t, const VerbsOps* ops, const IbConfig& ib, const RcConfig& rc,
       std::string why)
      : IbMd(t.name, ops, ib, std::move(why), t.need_mlx5), transport_(t), rc_(rc) {}

  const char* tl_name() const override { return transport_.name; }

  Result<std::unique_ptr<Iface>> iface_open(const IfaceParams& params) override {
    const int dev = find_device(params.dev_name);
    if (dev < 0) {
      MC_LOG(error) << transport_.name << ": no device '" << params.dev_name << "'";
      return Status::NoDevice;
    }
    MC_ASSIGN_OR_RETURN(std::unique_ptr<RcIface> iface,
                        transport_.iface_create(this, static_cast<size_t>(dev), rc_, params));
    return std::unique_ptr<Iface>(std::move(iface));
  }

 private:
  RcTransport transport_;
  RcConfig rc_;
};

// Each RC module carries its own copy of the tables (a convenience library
// linked into each): the registry knows them apart only by name.
bool has_table(const ucs::config::Registry& registry, const ucs::config::Table& table) {
  for (const ucs::config::Table* t : registry.tables()) {
    if (t->name() == table.name()) return true;
  }
  return false;
}

}  // namespace

std::vector<std::string> RcComponent::md_names() const {
  ucs::config::Sources sources = ucs::config::Sources::from_process().value_or({});
  Result<std::unique_ptr<MemoryDomain>> md = open(sources, &why_);
  if (!md.ok() || (*md)->query_tl_resources().empty()) return {};
  return {name_};
}

Result<std::unique_ptr<MemoryDomain>> RcComponent::md_open(const std::string& md_name,
                                                           const ucs::config::Sources& sources) {
  if (md_name != name_) return Status::NoElem;
  std::string why;
  MC_ASSIGN_OR_RETURN(std::unique_ptr<MemoryDomain> md, open(sources, &why));
  // With these sources (another provider, other devices) nothing is left.
  if (md->query_tl_resources().empty()) return Status::NoDevice;
  return md;
}

void RcComponent::register_config(ucs::config::Registry& registry) const {
  if (!has_table(registry, ib_config_table())) registry.add<IbConfig>(ib_config_table());
  if (!has_table(registry, rc_config_table())) registry.add<RcConfig>(rc_config_table());
}

Result<std::unique_ptr<MemoryDomain>> RcComponent::open(const ucs::config::Sources& sources,
                                                        std::string* why) const {
  MC_ASSIGN_OR_RETURN(IbConfig ib, ucs::config::read_table<IbConfig>(ib_config_table(), sources));
  MC_ASSIGN_OR_RETURN(RcConfig rc, ucs::config::read_table<RcConfig>(rc_config_table(), sources));
  std::string reason;
  Result<const VerbsOps*> ops = verbs_ops_for(ib, &reason);
  auto md = std::make_unique<RcMd>(transport_, ops.ok() ? *ops : nullptr, ib, rc,
                                   ops.ok() ? "" : "no RDMA devices: " + reason);
  *why = md->no_device_reason();
  return std::unique_ptr<MemoryDomain>(std::move(md));
}

}  // namespace mc::uct::ib::rc
