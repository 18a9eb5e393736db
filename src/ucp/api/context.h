// SPDX-License-Identifier: Apache-2.0
// Context: the UCP configuration, the loaded UCT components, their memory
// domains and every transport resource, each kept or filtered with the reason.
#pragma once

#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "ucp/api/config.h"
#include "ucs/config/sources.h"
#include "ucs/status/status.h"
#include "ucs/sys/visibility.h"
#include "ucs/topo/topo.h"
#include "uct/api/component.h"
#include "uct/api/md.h"

namespace mc::ucp {

using ucs::Result;
using ucs::Status;

class RemoteRegions;

/// Optional inputs of Context::create().
struct ContextParams {
  /// Where the knobs come from; null: the process's environment and files.
  const ucs::config::Sources* sources = nullptr;
  /// Use this configuration instead of reading the table (tests, embedders).
  std::optional<ContextConfig> config;
  /// Components linked into the application (tests, embedders) rather than
  /// loaded as modules: opened after the modules' components, filtered by
  /// MC_TLS like them, their configuration tables registered. Each must
  /// outlive the context.
  std::vector<uct::Component*> components;
};

/// An open memory domain.
struct MdEntry {
  uct::Component* component = nullptr;
  std::string name;
  std::unique_ptr<uct::MemoryDomain> md;
  uct::MdAttr attr;
};

/// A transport resource and whether this context uses it.
struct ResourceInfo {
  size_t md_index = 0;  ///< into Context::mds()
  uct::TlResource tl;
  bool enabled = true;
  std::string reason;  ///< why it is filtered; empty when enabled
  /// "tcp/eth0".
  std::string name() const { return tl.tl_name + "/" + tl.dev_name; }
};

/// The root object of UCP. Thread safety: immutable after create(), so any
/// thread may read it; it must outlive its workers and memory handles.
class MC_API Context {
 public:
  /// Reads the configuration (registering the UCP tables), loads the UCT
  /// components, opens every memory domain and lists the resources, filtered
  /// by MC_TLS, MC_NET_DEVICES and MC_SHM_DEVICES. A memory domain that fails
  /// to open is logged and skipped. Returns InvalidParam for an invalid knob
  /// (logged with the variable and what is accepted).
  static Result<std::unique_ptr<Context>> create(const ContextParams& params = {});
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  /// The configuration in force.
  const ContextConfig& config() const { return config_; }
  /// The sources the configuration came from (transports read theirs too).
  const ucs::config::Sources& sources() const { return sources_; }
  /// The open memory domains.
  const std::vector<MdEntry>& mds() const { return mds_; }
  /// Every resource, kept or filtered.
  const std::vector<ResourceInfo>& resources() const { return resources_; }
  /// What is wrong with MC_TLS, MC_NET_DEVICES and MC_SHM_DEVICES: each
  /// name they select ("^..." lists leave out, and are not checked) that no
  /// transport or device of this process has, with the names there are ("":
  /// nothing). Logged as a warning at create().
  const std::string& filter_problems() const { return filter_problems_; }
  /// The machine's topology (MC_TOPO_SYSFS_ROOT); null when it could not be read.
  const ucs::Topology* topology() const { return topology_ ? &*topology_ : nullptr; }
  /// NUMA node of device `dev_name`: the transport's answer, else the
  /// topology's; -1 when neither knows.
  int numa_node_of(const uct::TlResource& tl) const;
  /// Why UCT component `name` offers no usable resource, for messages: its
  /// own reason (a library or driver missing; "" when it gives none), or
  /// nullopt when no such component is loaded (mc_info -m says why).
  std::optional<std::string> component_unavailable_reason(const std::string& name) const;
  /// Writes one line per resource: name, md, device type, kept or why not.
  void print(std::ostream& os) const;
  /// The remote-accessible registrations of non-host memory (GPU memory)
  /// that peers may reach by remote staging. Thread-safe (its own lock).
  RemoteRegions& remote_regions() const { return *remote_regions_; }

 private:
  Context();
  void add_md(uct::Component* component, const std::string& md_name);
  std::string filter_reason(const uct::TlResource& tl) const;
  void check_filters(const std::vector<std::string>& transports);

  ContextConfig config_;
  TlsChoice tls_;  ///< MC_TLS as MC_FORCE_TCP / MC_FORCE_HCA leave it (choose_tls)
  ucs::config::Sources sources_;
  std::vector<MdEntry> mds_;
  std::vector<ResourceInfo> resources_;
  std::string filter_problems_;
  std::optional<ucs::Topology> topology_;
  std::unique_ptr<RemoteRegions> remote_regions_;  ///< core/remote_regions.h
};

}  // namespace mc::ucp
