// SPDX-License-Identifier: Apache-2.0
// mc_info --json: the writer and the endpoint report.
#include "info_json.h"

#include <sstream>

#include "ucs/datastruct/json.h"

namespace mc::info {

namespace wireup = ucp::wireup;
namespace proto = ucp::proto;

std::string json_string(std::string_view s) {
  std::string out;
  ucs::json::write_string(s, &out);
  return out;
}

std::ostream& JsonList::key(std::string_view k) {
  os_ << (first_ ? "" : ",") << json_string(k) << ":";
  first_ = false;
  return os_;
}

std::ostream& JsonList::item() {
  os_ << (first_ ? "" : ",");
  first_ = false;
  return os_;
}

namespace {

void print_lanes(const wireup::LaneSelection& sel, std::ostream& os) {
  os << "[";
  JsonList list(os);
  for (size_t i = 0; i < sel.lanes.size(); ++i) {
    const wireup::Candidate& c = sel.candidate_of(i);
    list.item() << "{\"lane\":" << i << ",\"pair\":" << json_string(c.name)
                << ",\"roles\":" << json_string(wireup::lane_roles_string(sel.lanes[i].roles))
                << "}";
  }
  os << "]";
}

void print_candidates(const wireup::LaneSelection& sel, std::ostream& os) {
  os << "[";
  JsonList list(os);
  for (const wireup::Candidate& c : sel.candidates) {
    std::ostream& o = list.item();
    o << "{";
    JsonList m(o);
    m.key("pair") << json_string(c.name);
    m.key("latency_s") << c.latency;
    m.key("overhead_s") << c.overhead;
    m.key("bandwidth_Bps") << c.bandwidth;
    m.key("priority") << c.priority;
    m.key("am_time_s") << (c.am_ok ? std::to_string(c.am_time) : "null");
    m.key("rma_time_s") << (c.rma_ok ? std::to_string(c.rma_time) : "null");
    m.key("zcopy_rails") << (c.bw_ok ? "true" : "false");
    o << "}";
  }
  os << "]";
}

void print_rejections(const wireup::LaneSelection& sel, std::ostream& os) {
  os << "[";
  JsonList list(os);
  for (const wireup::Rejection& r : sel.rejections) {
    list.item() << "{\"name\":" << json_string(r.name) << ",\"role\":" << json_string(r.role)
                << ",\"reason\":" << json_string(wireup::reject_reason_name(r.reason))
                << ",\"detail\":" << json_string(r.detail) << "}";
  }
  os << "]";
}

void print_table(const proto::ProtoTable& t, std::ostream& os) {
  os << "[";
  JsonList list(os);
  for (const proto::ProtoRange& r : t.ranges()) {
    std::ostream& o = list.item();
    o << "{\"min\":" << r.min
      << ",\"max\":" << (r.max == SIZE_MAX ? std::string("null") : std::to_string(r.max))
      << ",\"protocol\":" << json_string(proto::proto_kind_name(r.kind)) << ",\"lanes\":[";
    for (size_t i = 0; i < r.lanes.size(); ++i) o << (i ? "," : "") << r.lanes[i];
    o << "],\"cost_c_s\":" << r.cost_c << ",\"cost_m_s_per_B\":" << r.cost_m
      << ",\"forced\":" << (r.forced ? "true" : "false") << "}";
  }
  os << "]";
}

void print_protocols(const proto::EpProtocols& p, std::ostream& os) {
  os << "{";
  JsonList buffers(os);
  for (bool registered : {false, true}) {
    std::ostream& o = buffers.key(registered ? "registered" : "unregistered");
    o << "{";
    JsonList ops(o);
    for (proto::Op op : {proto::Op::Put, proto::Op::Get, proto::Op::Am}) {
      print_table(p.table(op, registered), ops.key(proto::op_name(op)));
    }
    o << "}";
  }
  os << "}";
}

}  // namespace

void print_endpoint_json(const wireup::WorkerAddress& peer, const wireup::LaneSelection& sel,
                         const proto::EpProtocols* protocols, std::ostream& os) {
  std::ostringstream uuid;
  uuid << std::hex << peer.uuid;
  os << "{";
  JsonList top(os);
  top.key("peer") << "{\"uuid\":" << json_string(uuid.str())
                  << ",\"hostname\":" << json_string(peer.hostname)
                  << ",\"ifaces\":" << peer.ifaces.size() << "}";
  print_lanes(sel, top.key("lanes"));
  print_candidates(sel, top.key("candidates"));
  print_rejections(sel, top.key("rejections"));
  if (protocols != nullptr) print_protocols(*protocols, top.key("protocols"));
  os << "}\n";
}

}  // namespace mc::info
