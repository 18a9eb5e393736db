// SPDX-License-Identifier: Apache-2.0
// mc_info -d --json: components, memory domains, transports and their
// attributes as one JSON document (the text form is in mc_info.cc).
#include <memory>
#include <string>
#include <vector>

#include "info_build.h"
#include "info_json.h"
#include "ucs/module/module_loader.h"
#include "uct/api/iface.h"
#include "uct/base/component_loader.h"

namespace mc::info {

namespace {

void mem_types(uct::MemTypeMask mask, std::ostream& os) {
  os << "[";
  JsonList list(os);
  for (uct::MemType t :
       {uct::MemType::Host, uct::MemType::Cuda, uct::MemType::CudaManaged, uct::MemType::File}) {
    if (mask & uct::mem_type_bit(t)) list.item() << json_string(uct::mem_type_name(t));
  }
  os << "]";
}

void limits(const uct::OpLimits& l, std::ostream& os) {
  os << "{\"max_short\":" << l.max_short << ",\"max_bcopy\":" << l.max_bcopy
     << ",\"min_zcopy\":" << l.min_zcopy << ",\"max_zcopy\":" << l.max_zcopy
     << ",\"max_iov\":" << l.max_iov << "}";
}

void transport(uct::MemoryDomain& md, const uct::TlResource& tl, std::ostream& os) {
  os << "{";
  JsonList f(os);
  f.key("transport") << json_string(tl.tl_name);
  f.key("device") << json_string(tl.dev_name);
  f.key("device_type") << json_string(uct::device_type_name(tl.dev_type));
  f.key("numa_node") << tl.numa_node;
  uct::IfaceParams params;
  params.tl_name = tl.tl_name;
  params.dev_name = tl.dev_name;
  ucs::Result<std::unique_ptr<uct::Iface>> iface = md.iface_open(params);
  if (!iface.ok()) {
    f.key("error") << json_string(std::string("cannot open: ") +
                                  ucs::status_string(iface.status()));
    os << "}";
    return;
  }
  const uct::IfaceAttr a = (*iface)->query();
  f.key("latency_s") << a.latency.c;
  f.key("latency_s_per_B") << a.latency.m;
  f.key("bandwidth_Bps") << a.bandwidth.total();
  f.key("overhead_s") << a.overhead;
  f.key("priority") << a.priority;
  f.key("caps") << json_string(uct::cap_string(a.cap));
  mem_types(a.access_mem_types, f.key("access_mem_types"));
  limits(a.am, f.key("am"));
  f.key("am_max_hdr") << a.am.max_hdr;
  limits(a.put, f.key("put"));
  limits(a.get, f.key("get"));
  f.key("address_lengths") << "{\"device\":" << a.device_addr_len
                           << ",\"iface\":" << a.iface_addr_len << ",\"ep\":" << a.ep_addr_len
                           << "}";
  os << "}";
}

void memory_domain(uct::Component& c, const std::string& name, const ucs::config::Sources& sources,
                   std::ostream& os) {
  os << "{";
  JsonList f(os);
  f.key("name") << json_string(name);
  ucs::Result<std::unique_ptr<uct::MemoryDomain>> md = c.md_open(name, sources);
  if (!md.ok()) {
    f.key("error") << json_string(std::string("cannot open: ") + ucs::status_string(md.status()));
    os << "}";
    return;
  }
  const uct::MdAttr a = (*md)->query();
  f.key("register") << ((a.flags & uct::kMdReg) ? "true" : "false");
  f.key("allocate") << ((a.flags & uct::kMdAlloc) ? "true" : "false");
  f.key("register_files") << ((a.flags & uct::kMdRegFile) ? "true" : "false");
  f.key("rkey_max_bytes") << a.rkey_packed_size;
  f.key("reg_cost_s") << a.reg_cost.c;
  f.key("reg_cost_s_per_B") << a.reg_cost.m;
  mem_types(a.reg_mem_types, f.key("register_mem_types"));
  mem_types(a.access_mem_types, f.key("access_mem_types"));
  mem_types(a.detect_mem_types, f.key("detect_mem_types"));
  std::ostream& n = f.key("notes");
  n << "[";
  JsonList notes(n);
  for (const std::string& note : a.notes) notes.item() << json_string(note);
  n << "]";
  std::ostream& t = f.key("transports");
  t << "[";
  JsonList tls(t);
  for (const uct::TlResource& tl : (*md)->query_tl_resources()) transport(**md, tl, tls.item());
  t << "]";
  os << "}";
}

}  // namespace

void print_devices_json(std::ostream& os) {
  std::vector<ucs::ModuleInfo> modules;
  std::vector<uct::Component*> components = uct::load_components(&modules);
  const ucs::config::Sources sources = ucs::config::Sources::from_process().value_or({});
  os << "{\"modules_not_loaded\":[";
  JsonList failed(os);
  for (const ucs::ModuleInfo& m : modules) {
    if (m.state == ucs::ModuleState::Loaded) continue;
    failed.item() << "{\"name\":" << json_string(m.name)
                  << ",\"state\":" << json_string(ucs::module_state_name(m.state))
                  << ",\"reason\":" << json_string(m.reason) << "}";
  }
  os << "],\"components\":[";
  JsonList comps(os);
  for (uct::Component* c : components) {
    std::ostream& o = comps.item();
    o << "{\"name\":" << json_string(c->name())
      << ",\"unavailable\":" << json_string(c->unavailable_reason()) << ",\"memory_domains\":[";
    JsonList mds(o);
    for (const std::string& md : c->md_names()) memory_domain(*c, md, sources, mds.item());
    o << "]}";
  }
  os << "]}\n";
}

}  // namespace mc::info
