// SPDX-License-Identifier: Apache-2.0
// Context: components, memory domains, resources and their filters.
#include "ucp/api/context.h"

#include <algorithm>

#include "ucp/core/remote_regions.h"
#include "ucs/log/log.h"
#include "uct/base/component_loader.h"

namespace mc::ucp {

namespace cfg = ucs::config;

Result<std::unique_ptr<Context>> Context::create(const ContextParams& params) {
  register_ucp_config_tables(ucs::config::Registry::instance());
  std::unique_ptr<Context> ctx(new Context());
  if (params.sources) {
    ctx->sources_ = *params.sources;
  } else {
    std::string error;
    Result<ucs::config::Sources> sources = ucs::config::Sources::from_process(&error);
    if (!sources.ok()) {
      MC_LOG(error) << "ucp: cannot read the configuration: " << error;
      return sources.status();
    }
    ctx->sources_ = std::move(*sources);
  }
  if (params.config) {
    ctx->config_ = *params.config;
  } else {
    MC_ASSIGN_OR_RETURN(ctx->config_, ucs::config::read_table<ContextConfig>(context_config_table(),
                                                                             ctx->sources_));
  }
  {
    std::string error;
    Result<TlsChoice> choice = choose_tls(ctx->config_, &error);
    if (!choice.ok()) {
      MC_LOG(error) << "ucp: " << error;
      return choice.status();
    }
    ctx->tls_ = std::move(*choice);
    if (!ctx->tls_.note.empty()) MC_LOG(warn) << "ucp: " << ctx->tls_.note;
  }
  std::vector<std::string> transports;  // every component's and resource's name
  for (uct::Component* component : uct::load_components()) {
    transports.push_back(component->name());
    for (const std::string& md_name : component->md_names()) ctx->add_md(component, md_name);
  }
  for (uct::Component* component : params.components) {
    component->register_config(ucs::config::Registry::instance());
    transports.push_back(component->name());
    for (const std::string& md_name : component->md_names()) ctx->add_md(component, md_name);
  }
  ctx->check_filters(transports);
  // The topology ranks rails by NUMA node; without it there is no preference.
  Result<ucs::Topology> topo = ucs::Topology::discover(ctx->sources_);
  if (topo.ok()) {
    ctx->topology_ = std::move(*topo);
  } else {
    MC_LOG(warn) << "ucp: topology unknown (" << ucs::status_string(topo.status())
                 << "): rails are chosen without NUMA preference";
  }
  if (ctx->tls_.rdma_required &&
      std::none_of(ctx->resources_.begin(), ctx->resources_.end(), [](const ResourceInfo& r) {
        return r.enabled && r.tl.tl_name.starts_with("rc_");
      })) {
    MC_LOG(error) << "ucp: MC_FORCE_HCA=y, but no RDMA device is usable (no rc_verbs or rc_mlx5 "
                     "resource"
                  << (ctx->resources_.empty() ? "" : " passed the filters") << ")";
    return Status::NoDevice;
  }
  // Every table of this process is registered now (UCS, the loaded
  // transports, UCP): an MC_* setting none of them declares is a typo.
  ucs::config::Registry::instance().warn_unknown(ctx->sources_);
  for (const ResourceInfo& r : ctx->resources_) {
    MC_LOG(debug) << "ucp: resource " << r.name() << (r.enabled ? " kept" : " " + r.reason);
  }
  return ctx;
}

Context::Context() : remote_regions_(std::make_unique<RemoteRegions>()) {}

Context::~Context() = default;

void Context::add_md(uct::Component* component, const std::string& md_name) {
  Result<std::unique_ptr<uct::MemoryDomain>> md = component->md_open(md_name, sources_);
  if (!md.ok()) {
    MC_LOG(warn) << "ucp: memory domain " << md_name << " of component " << component->name()
                 << " did not open: " << ucs::status_string(md.status());
    return;
  }
  MdEntry entry{component, md_name, std::move(*md), {}};
  entry.attr = entry.md->query();
  const size_t md_index = mds_.size();
  for (const uct::TlResource& tl : entry.md->query_tl_resources()) {
    ResourceInfo info{md_index, tl, true, filter_reason(tl)};
    info.enabled = info.reason.empty();
    resources_.push_back(std::move(info));
  }
  mds_.push_back(std::move(entry));
}

std::string Context::filter_reason(const uct::TlResource& tl) const {
  const auto& fmt = context_config_table();
  auto value_of = [&fmt, this](const char* name) {
    for (const auto& f : fmt.fields()) {
      if (f.name == name) return f.get(&config_);
    }
    return std::string();
  };
  if (!tl_allowed(tls_.tls, tl.tl_name)) return "filtered by " + tls_.origin;
  if (tl.dev_type == uct::DeviceType::Net && !config_.net_devices.allows(tl.dev_name)) {
    return "filtered by MC_NET_DEVICES=" + value_of("NET_DEVICES");
  }
  if (tl.dev_type == uct::DeviceType::Shm && !config_.shm_devices.allows(tl.dev_name)) {
    return "filtered by MC_SHM_DEVICES=" + value_of("SHM_DEVICES");
  }
  return "";
}

void Context::check_filters(const std::vector<std::string>& transports) {
  std::vector<std::string> tls = transports, net, shm;
  for (const ResourceInfo& r : resources_) {
    tls.push_back(r.tl.tl_name);
    if (r.tl.dev_type == uct::DeviceType::Net) net.push_back(r.tl.dev_name);
    if (r.tl.dev_type == uct::DeviceType::Shm) shm.push_back(r.tl.dev_name);
  }
  auto join = [](std::vector<std::string> names) {
    std::sort(names.begin(), names.end());
    names.erase(std::unique(names.begin(), names.end()), names.end());
    std::string out;
    for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
    return out.empty() ? std::string("none") : out;
  };
  std::string problems;
  auto check = [&](const char* var, const cfg::AllowList& list,
                   const std::vector<std::string>& known, auto matches) {
    // Leaving out what is not there is harmless ("^cuda_copy" without CUDA).
    if (list.negate) return;
    for (const std::string& item : list.items) {
      if (cfg::to_lower(item) == "all") continue;
      const bool found = std::any_of(known.begin(), known.end(),
                                     [&](const std::string& k) { return matches(item, k); });
      if (found) continue;
      problems += std::string(problems.empty() ? "" : "; ") + var + " names '" + item +
                  "', which this process has not (it has: " + join(known) + ")";
    }
  };
  check("MC_TLS", config_.tls, tls, [](const std::string& item, const std::string& tl) {
    const std::string lower = cfg::to_lower(item);
    return lower == "shm" || lower == "net" || tl_allowed(cfg::AllowList{false, {item}}, tl);
  });
  check("MC_NET_DEVICES", config_.net_devices, net,
        [](const std::string& item, const std::string& dev) { return item == dev; });
  check("MC_SHM_DEVICES", config_.shm_devices, shm,
        [](const std::string& item, const std::string& dev) { return item == dev; });
  if (!problems.empty()) MC_LOG(warn) << "ucp: " << problems;
  filter_problems_ = std::move(problems);
}

void Context::print(std::ostream& os) const {
  for (const ResourceInfo& r : resources_) {
    os << "  " << r.name() << " md " << mds_[r.md_index].name << " ("
       << uct::device_type_name(r.tl.dev_type)
       << "): " << (r.enabled ? std::string("used") : r.reason) << "\n";
  }
}

std::optional<std::string> Context::component_unavailable_reason(const std::string& name) const {
  const uct::Component* c = uct::find_component(name);
  if (c == nullptr) return std::nullopt;
  return c->unavailable_reason();
}

int Context::numa_node_of(const uct::TlResource& tl) const {
  if (tl.numa_node >= 0 || !topology_) return tl.numa_node;
  const ucs::TopoDevice* dev = topology_->find(tl.dev_name);
  return dev ? dev->numa_node : -1;
}

}  // namespace mc::ucp
