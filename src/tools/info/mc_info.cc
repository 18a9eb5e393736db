// SPDX-License-Identifier: Apache-2.0
// mc_info: what mc found and loaded on this machine, and every configuration
// knob with its value and documentation.
#include <getopt.h>

#include <cstdio>
#include <iomanip>
#include <iostream>

#include "config.h"
#include "info_build.h"
#include "info_json.h"
#include "info_reference.h"
#include "info_ucp.h"
#include "tools/tool_version.h"
#include "ucs/config/registry.h"
#include "ucs/log/log.h"
#include "ucs/module/module_loader.h"
#include "ucs/sys/sys.h"
#include "ucp/api/config.h"
#include "ucp/metadata/config.h"
#include "ucp/te/te_config.h"
#include "ucs/topo/topo.h"
#include "uct/api/iface.h"
#include "uct/base/component_loader.h"

namespace {

using namespace mc;

void usage(FILE* out) {
  std::fprintf(
      out,
      "Usage: mc_info [options] [-e peer] [-p peer]\n"
      "With no option: version, modules and configuration.\n"
      "  -v   version and build\n"
      "  -b   build configuration: version, compiler, and what configure found\n"
      "  -m   modules: path, load result, ABI, build tag, and why a module failed\n"
      "  -d   components, memory domains, transports and devices with their attributes\n"
      "  -c   configuration: every MC_* variable with its value\n"
      "  -f   configuration with documentation, syntax, default and origin (implies -c)\n"
      "  -M   configuration reference as Markdown (docs/configuration.md)\n"
      "  -T   topology: NUMA nodes, NICs, GPUs, and the NIC priority matrix\n"
      "  -s   system: host identity used for same-host reachability\n"
      "  -w   UCP worker: resources kept or filtered, and the worker address in hex\n"
      "  -e P lane selection of an endpoint to peer P: lanes, score terms, rejections\n"
      "  -p P protocol table of an endpoint to peer P\n"
      "       P: 'loopback' (a second worker here, connected to), a hex worker\n"
      "       address (as -w prints), or a file holding one\n"
      "  --json  JSON instead of text (every option but -M), one document per option\n"
      "  -h, --help  this help\n"
      "  --version   the version line\n");
}

void print_version(bool json) {
  if (json) {
    std::cout << "{\"version\":" << info::json_string(MC_VERSION)
              << ",\"build_kind\":" << info::json_string(MC_BUILD_KIND)
              << ",\"module_abi\":" << MC_MODULE_ABI_VERSION
              << ",\"build_tag\":" << info::json_string(MC_MODULE_BUILD_TAG)
              << ",\"libmc_ucs\":" << info::json_string(ucs::ucs_library_path()) << "}\n";
    return;
  }
  std::cout << "# mc version " << MC_VERSION << " (" << MC_BUILD_KIND << ")\n"
            << "# module ABI " << MC_MODULE_ABI_VERSION << ", build tag " << MC_MODULE_BUILD_TAG
            << "\n"
            << "# libmc_ucs: " << ucs::ucs_library_path() << "\n";
  const std::vector<std::string> copies = ucs::loaded_ucs_copies();
  if (copies.size() > 1) {
    std::cout << "# ERROR: " << copies.size() << " copies of libmc_ucs are loaded:";
    for (const std::string& c : copies) std::cout << " " << c;
    std::cout << "\n";
  }
}

void print_modules() {
  ucs::ModuleLoader& loader = ucs::ModuleLoader::instance();
  std::cout << "#\n# Module search path (in order):\n";
  for (const std::string& d : loader.search_path()) std::cout << "#   " << d << "\n";
  const std::vector<ucs::ModuleInfo> modules = loader.load_all();
  std::cout << "#\n# Modules: " << modules.size() << " found\n";
  if (modules.empty()) std::cout << "#   (none)\n";
  for (const ucs::ModuleInfo& m : modules) {
    std::cout << "#   " << std::left << std::setw(10) << m.kind << std::setw(14) << m.name
              << std::setw(16) << ucs::module_state_name(m.state);
    if (m.abi_version != 0) std::cout << "abi " << m.abi_version << "  ";
    if (!m.build_tag.empty()) std::cout << "tag " << m.build_tag << "  ";
    if (!m.version.empty()) std::cout << "version " << m.version << "  ";
    std::cout << m.path << "\n";
    if (!m.reason.empty()) std::cout << "#   " << std::string(24, ' ') << "reason: " << m.reason << "\n";
  }
  // What this build has not, and why: configure's reasons.
  for (const info::LeftOutModule& m : info::configure_left_out()) {
    std::cout << "#   " << std::left << std::setw(10) << m.kind << std::setw(14) << m.name
              << std::setw(16) << "left out" << "by configure\n"
              << "#   " << std::string(24, ' ') << "reason: " << m.reason << "\n";
  }
  // Loaded modules whose component found no device say why (cuda_copy
  // without a GPU or a driver).
  for (uct::Component* c : uct::load_components()) {
    const std::string why = c->unavailable_reason();
    if (!why.empty()) std::cout << "#   uct component " << c->name() << ": " << why << "\n";
  }
}

// Limits of one operation family, "short 8k bcopy 64k zcopy [0, inf] iov 16".
std::string limits_string(const uct::OpLimits& l) {
  const auto size = ucs::config::size_parser();
  return "short " + size.format(l.max_short) + ", bcopy " + size.format(l.max_bcopy) +
         ", zcopy [" + size.format(l.min_zcopy) + ", " + size.format(l.max_zcopy) + "], iov " +
         std::to_string(l.max_iov);
}

// "host|cuda", or "none".
std::string mem_types_string(uct::MemTypeMask mask) {
  std::string s;
  for (uct::MemType t : {uct::MemType::Host, uct::MemType::Cuda, uct::MemType::CudaManaged,
                         uct::MemType::File}) {
    if (mask & uct::mem_type_bit(t)) s += (s.empty() ? "" : "|") + std::string(uct::mem_type_name(t));
  }
  return s.empty() ? "none" : s;
}

void print_iface(uct::MemoryDomain& md, const uct::TlResource& tl) {
  std::cout << "#      transport " << tl.tl_name << " on " << tl.dev_name << " ("
            << uct::device_type_name(tl.dev_type) << ", numa " << tl.numa_node << ")\n";
  uct::IfaceParams params;
  params.tl_name = tl.tl_name;
  params.dev_name = tl.dev_name;
  ucs::Result<std::unique_ptr<uct::Iface>> iface = md.iface_open(params);
  if (!iface.ok()) {
    std::cout << "#        cannot open: " << ucs::status_string(iface.status()) << "\n";
    return;
  }
  const uct::IfaceAttr a = (*iface)->query();
  std::cout << std::fixed << std::setprecision(1) << "#        latency " << a.latency.c * 1e9 << " ns + "
            << a.latency.m * 1e9 << " ns/byte, bandwidth " << a.bandwidth.total() / 1e6
            << " MB/s, overhead " << a.overhead * 1e9 << " ns, priority " << a.priority << "\n"
            << "#        caps " << uct::cap_string(a.cap) << "\n"
            << "#        local memory " << mem_types_string(a.access_mem_types) << "\n"
            << "#        am:  " << limits_string(a.am) << ", header " << a.am.max_hdr << "\n"
            << "#        put: " << limits_string(a.put) << "\n"
            << "#        get: " << limits_string(a.get) << "\n"
            << "#        addresses: device " << a.device_addr_len << " B, iface "
            << a.iface_addr_len << " B, ep " << a.ep_addr_len << " B\n";
}

void print_devices() {
  std::vector<ucs::ModuleInfo> modules;
  std::vector<uct::Component*> components = uct::load_components(&modules);
  ucs::config::Sources sources = ucs::config::Sources::from_process().value_or({});
  for (const ucs::ModuleInfo& m : modules) {
    if (m.state != ucs::ModuleState::Loaded) {
      std::cout << "#\n# Transport module " << m.name << ": " << ucs::module_state_name(m.state)
                << ": " << m.reason << "\n";
    }
  }
  for (uct::Component* c : components) {
    std::cout << "#\n# Component: " << c->name() << "\n";
    const std::vector<std::string> mds = c->md_names();
    if (mds.empty()) {
      const std::string why = c->unavailable_reason();
      std::cout << "#   no memory domain: " << (why.empty() ? "no device found" : why) << "\n";
    }
    for (const std::string& md_name : mds) {
      ucs::Result<std::unique_ptr<uct::MemoryDomain>> md = c->md_open(md_name, sources);
      if (!md.ok()) {
        std::cout << "#   memory domain " << md_name << ": cannot open: "
                  << ucs::status_string(md.status()) << "\n";
        continue;
      }
      const uct::MdAttr a = (*md)->query();
      std::cout << "#   memory domain " << md_name << ": register "
                << ((a.flags & uct::kMdReg) ? "yes" : "no") << ", allocate "
                << ((a.flags & uct::kMdAlloc) ? "yes" : "no") << ", rkey <= "
                << a.rkey_packed_size << " B, registration " << a.reg_cost.c * 1e9 << " ns + "
                << a.reg_cost.m * 1e9 << " ns/byte"
                << ((a.flags & uct::kMdRegFile) ? ", register files yes" : "") << "\n"
                << "#     memory types: register " << mem_types_string(a.reg_mem_types)
                << ", access " << mem_types_string(a.access_mem_types) << ", detect "
                << mem_types_string(a.detect_mem_types) << "\n";
      for (const std::string& note : a.notes) std::cout << "#     " << note << "\n";
      const std::vector<uct::TlResource> tls = (*md)->query_tl_resources();
      if (tls.empty()) std::cout << "#      no transport resources: no device found\n";
      for (const uct::TlResource& tl : tls) print_iface(**md, tl);
    }
  }
}

int print_config(bool full, bool json = false) {
  // Loaded transports register their tables through their components.
  (void)uct::load_components();
  ucs::config::Registry& registry = ucs::config::Registry::instance();
  ucp::register_ucp_config_tables(registry);
  metadata::register_metadata_config_tables(registry);
  te::register_te_config_tables(registry);
  std::string error;
  ucs::Result<ucs::config::Sources> sources = ucs::config::Sources::from_process(&error);
  if (!sources.ok()) {
    std::cerr << "mc_info: " << error << "\n";
    return 1;
  }
  if (json) {
    info::print_config_json(registry, *sources, full, std::cout);
    return 0;
  }
  std::cout << "#\n# Configuration files read:";
  for (const std::string& f : sources->files()) std::cout << " " << f;
  if (sources->files().empty()) std::cout << " (none)";
  std::cout << "\n";
  registry.print(std::cout, *sources, full);
  for (const ucs::config::UnknownVar& u : registry.find_unknown(*sources)) {
    std::cout << "# WARNING: unknown variable " << u.name << " (from " << u.origin << ")"
              << (u.suggestion.empty() ? "" : ", did you mean " + u.suggestion + "?") << "\n";
  }
  return 0;
}

void print_topo_devices(const std::vector<ucs::TopoDevice>& devices, std::ostream& os) {
  os << "[";
  info::JsonList list(os);
  for (const ucs::TopoDevice& d : devices) {
    list.item() << "{\"name\":" << info::json_string(d.name)
                << ",\"kind\":" << info::json_string(ucs::device_kind_name(d.kind))
                << ",\"pci\":" << info::json_string(d.pci_addr) << ",\"numa_node\":" << d.numa_node
                << ",\"virtual\":" << (d.is_virtual ? "true" : "false") << "}";
  }
  os << "]";
}

int print_topology(bool json) {
  ucs::Result<ucs::Topology> topo = ucs::Topology::discover();
  if (!topo.ok()) {
    std::cerr << "mc_info: topology discovery failed: " << ucs::status_string(topo.status())
              << "\n";
    return 1;
  }
  if (json) {
    std::cout << "{\"sysfs_root\":" << info::json_string(topo->sysfs_root())
              << ",\"numa_nodes\":[";
    info::JsonList nodes(std::cout);
    for (const ucs::NumaNode& n : topo->numa_nodes()) {
      nodes.item() << "{\"id\":" << n.id
                   << ",\"cpus\":" << info::json_string(ucs::format_cpu_list(n.cpus)) << "}";
    }
    std::cout << "],\"nics\":";
    print_topo_devices(topo->nics(), std::cout);
    std::cout << ",\"gpus\":";
    print_topo_devices(topo->gpus(), std::cout);
    std::cout << ",\"priority_matrix\":" << topo->priority_matrix_json() << "}\n";
    return 0;
  }
  topo->print(std::cout);
  std::cout << "# NIC priority matrix: " << topo->priority_matrix_json() << "\n";
  return 0;
}

void print_system(bool json) {
  const ucs::HostIdentity& id = ucs::host_identity();
  if (json) {
    std::cout << "{\"host\":" << info::json_string(id.hostname)
              << ",\"boot_id\":" << info::json_string(id.boot_id)
              << ",\"net_ns\":" << id.net_ns
              << ",\"ipc_ns\":" << id.ipc_ns
              << ",\"mnt_ns\":" << id.mnt_ns << ",\"cpus\":" << ucs::cpu_count()
              << ",\"page_size\":" << ucs::page_size()
              << ",\"huge_page_size\":" << ucs::huge_page_size() << "}\n";
    return;
  }
  std::cout << "# host " << id.hostname << ", boot id " << id.boot_id << "\n"
            << "# namespaces: net " << id.net_ns << ", ipc " << id.ipc_ns << ", mnt " << id.mnt_ns
            << "\n"
            << "# cpus " << ucs::cpu_count() << ", page " << ucs::page_size() << " bytes, huge page "
            << ucs::huge_page_size() << " bytes\n";
}

}  // namespace

int main(int argc, char** argv) {
  if (ucs::is_error(ucs::log_init(argv[0]))) return 1;
  bool version = false, modules = false, config = false, full = false, markdown = false;
  bool topology = false, system = false, devices = false, worker = false, build = false;
  bool json = false;
  std::string peer;
  info::EndpointReport report;
  int c;
  static const option kLong[] = {{"json", no_argument, nullptr, 'J'},
                                 {"help", no_argument, nullptr, 'h'},
                                 {"version", no_argument, nullptr, 'V'},
                                 {nullptr, 0, nullptr, 0}};
  while ((c = getopt_long(argc, argv, "vbmdcfMTswe:p:h", kLong, nullptr)) != -1) {
    switch (c) {
      case 'v': version = true; break;
      case 'b': build = true; break;
      case 'J': json = true; break;
      case 'm': modules = true; break;
      case 'd': devices = true; break;
      case 'c': config = true; break;
      case 'f': config = full = true; break;
      case 'M': markdown = true; break;
      case 'T': topology = true; break;
      case 's': system = true; break;
      case 'w': worker = true; break;
      case 'e':
      case 'p':
        if (!peer.empty() && peer != optarg) {
          std::cerr << "mc_info: -e and -p name different peers\n";
          return 2;
        }
        peer = optarg;
        (c == 'e' ? report.lanes : report.protocols) = true;
        break;
      case 'h': usage(stdout); return 0;
      case 'V': return tools::print_version("mc_info");
      default: usage(stderr); return 2;
    }
  }
  if (optind < argc) {
    std::cerr << "mc_info: unexpected argument '" << argv[optind] << "'\n";
    usage(stderr);
    return 2;
  }
  if (markdown) {
    info::print_config_reference(std::cout);
    return 0;
  }
  report.json = json;
  if (!(version || modules || devices || config || topology || system || worker || build ||
        !peer.empty())) {
    version = modules = config = !json;
    build = json;  // one JSON document: the build report holds the version
  }

  // Every layer's knobs are known before a context checks the environment
  // for unknown ones (the Transfer Engine's MC_MIN_RPC_PORT is no typo here).
  ucs::config::Registry& registry = ucs::config::Registry::instance();
  metadata::register_metadata_config_tables(registry);
  te::register_te_config_tables(registry);
  int rc = 0;
  if (version) print_version(json);
  if (build) info::print_build(json, std::cout);
  if (system) print_system(json);
  if (modules) json ? info::print_modules_json(std::cout) : print_modules();
  if (devices) json ? info::print_devices_json(std::cout) : print_devices();
  if (topology) rc |= print_topology(json);
  if (config) rc |= print_config(full, json);
  if (worker) rc |= info::print_ucp_worker(json);
  if (!peer.empty()) rc |= info::print_ucp_endpoint(peer, report);
  return rc;
}
