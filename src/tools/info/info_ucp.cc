// SPDX-License-Identifier: Apache-2.0
// mc_info -w / -e / -p: UCP's view of this machine and of one peer, through
// the same selection functions an endpoint uses.
#include "info_ucp.h"

#include <cctype>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "info_json.h"
#include "ucp/api/ucp.h"
#include "ucp/core/endpoint.h"
#include "ucp/core/worker.h"

namespace mc::info {
namespace {

using ucs::Result;
using ucs::Status;
namespace wireup = ucp::wireup;
namespace proto = ucp::proto;

std::string hex_encode(const std::vector<uint8_t>& bytes) {
  std::ostringstream os;
  os << std::hex << std::setfill('0');
  for (uint8_t b : bytes) os << std::setw(2) << static_cast<unsigned>(b);
  return os.str();
}

// Hex text, whitespace ignored; false on any other character or an odd count.
bool hex_decode(const std::string& text, std::vector<uint8_t>* out) {
  std::string digits;
  for (char c : text) {
    if (std::isspace(static_cast<unsigned char>(c))) continue;
    if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
    digits.push_back(c);
  }
  if (digits.empty() || digits.size() % 2 != 0) return false;
  out->clear();
  for (size_t i = 0; i < digits.size(); i += 2) {
    out->push_back(static_cast<uint8_t>(std::stoul(digits.substr(i, 2), nullptr, 16)));
  }
  return true;
}

// The peer's packed address from a file or from the argument itself.
bool read_peer(const std::string& peer, std::vector<uint8_t>* out) {
  std::ifstream file(peer);
  std::string text = peer;
  if (file) {
    std::ostringstream os;
    os << file.rdbuf();
    text = os.str();
  }
  return hex_decode(text, out);
}

std::string us(double seconds) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(3) << seconds * 1e6 << "us";
  return os.str();
}

// Every scored pair with the terms of its scores, chosen or not.
void print_candidates(const wireup::LaneSelection& sel, std::ostream& os) {
  os << " candidates (score terms):\n";
  if (sel.candidates.empty()) os << "  (none reachable)\n";
  for (const wireup::Candidate& c : sel.candidates) {
    os << "  " << c.name << ": latency " << us(c.latency) << ", overhead " << us(c.overhead)
       << ", bandwidth " << std::fixed << std::setprecision(1) << c.bandwidth / 1e6
       << "MB/s, priority " << c.priority << ", am " << (c.am_ok ? us(c.am_time) : "no") << ", rma "
       << (c.rma_ok ? us(c.rma_time) : "no") << ", zcopy rails " << (c.bw_ok ? "yes" : "no")
       << "\n";
  }
}

void print_worker_json(const ucp::Context& ctx, const ucp::Worker& worker) {
  std::ostringstream uuid;
  uuid << std::hex << worker.uuid();
  std::cout << "{\"uuid\":" << json_string(uuid.str()) << ",\"resources\":[";
  JsonList list(std::cout);
  for (const ucp::ResourceInfo& r : ctx.resources()) {
    list.item() << "{\"name\":" << json_string(r.name())
                << ",\"md\":" << json_string(ctx.mds()[r.md_index].name)
                << ",\"enabled\":" << (r.enabled ? "true" : "false")
                << ",\"reason\":" << json_string(r.reason) << "}";
  }
  std::cout << "],\"thread_mode\":"
            << json_string(worker.thread_mode() == ucp::ThreadMode::Multi ? "multi" : "single")
            << ",\"address\":" << json_string(hex_encode(worker.address())) << "}\n";
}

void print_report(const wireup::WorkerAddress& peer, const wireup::LaneSelection& sel,
                  const proto::EpProtocols* protocols, const EndpointReport& report) {
  if (report.json) {
    print_endpoint_json(peer, sel, report.protocols ? protocols : nullptr, std::cout);
    return;
  }
  std::cout << "# endpoint to worker " << std::hex << peer.uuid << std::dec << " on "
            << peer.hostname << " (" << peer.ifaces.size() << " remote ifaces)\n";
  if (report.lanes) {
    std::cout << " lanes:\n";
    sel.print(std::cout);
    print_candidates(sel, std::cout);
  }
  if (report.protocols && protocols != nullptr) {
    std::cout << " protocols";
    protocols->print(std::cout);
  }
}

// Scores `packed` from `worker` without connecting: the peer may be gone.
int report_address(ucp::Worker& worker, const std::vector<uint8_t>& packed,
                   const EndpointReport& report) {
  std::string why;
  Result<wireup::WorkerAddress> peer = wireup::address_unpack(packed, &why);
  if (!peer.ok()) {
    std::cerr << "mc_info: invalid worker address: " << why << "\n";
    return 1;
  }
  const ucp::ContextConfig& cfg = worker.context().config();
  const wireup::LaneSelectParams params = ucp::impl(worker).lane_params(*peer);
  const std::vector<wireup::AddressEntry>& remote = peer->ifaces;
  auto reachable = [&worker, &remote](size_t li, size_t ri, std::string* reason) {
    const int k = ucp::impl(worker).iface_of(li);
    if (k < 0) return *reason = "no iface", false;
    return ucp::impl(worker).ifaces()[static_cast<size_t>(k)].iface->is_reachable(
        remote[ri].device_addr, remote[ri].iface_addr, reason);
  };
  const wireup::LaneSelection sel =
      wireup::select_lanes(ucp::impl(worker).local_resources(), remote, reachable, params);
  if (sel.lanes.empty()) {
    print_report(*peer, sel, nullptr, report);
    std::cerr << "mc_info: no lane reaches the peer\n";
    return 1;
  }
  proto::EpProtoParams pparams;
  pparams.slice_size = cfg.slice_size;
  pparams.bcopy_thresh = cfg.bcopy_thresh;
  pparams.zcopy_thresh = cfg.zcopy_thresh;
  pparams.rndv_thresh = cfg.rndv_thresh;
  const proto::EpProtocols protocols =
      proto::EpProtocols::build(sel, ucp::impl(worker).local_resources(), pparams);
  print_report(*peer, sel, &protocols, report);
  return 0;
}

// How the NIC priority matrix of this host (both sides of a loopback
// endpoint) orders the endpoint's put/get lanes for memory at each location,
// as the Transfer Engine asks UCP to (ucp::RailPreference).
void print_paths(const ucp::Context& ctx, const ucp::Endpoint& ep) {
  const ucs::Topology* topo = ctx.topology();
  std::cout << " path choice by memory location (NIC priority matrix, both sides):\n";
  if (!topo || topo->priority_matrix().empty()) {
    std::cout << "  none: no priority matrix (topology unknown or no NIC)\n";
    return;
  }
  for (const auto& [loc, entry] : topo->priority_matrix()) {
    ucp::RailPreference rails;
    rails.local_preferred = rails.remote_preferred = topo->with_netdevs(entry.preferred);
    rails.local_secondary = rails.remote_secondary = topo->with_netdevs(entry.secondary);
    const std::vector<ucp::LaneRank> ranked = ep.rank_lanes(rails);
    std::cout << "  " << loc << ":";
    for (const ucp::LaneRank& r : ranked) {
      std::cout << " lane " << r.lane << " " << ucp::impl(ep).lanes().candidate_of(r.lane).name
                << " rank " << r.rank << (r.carries ? " carries" : " stand-by") << ";";
    }
    std::cout << "\n";
  }
}

// A second worker of this process, and a real endpoint to it.
int report_loopback(ucp::Context& ctx, ucp::Worker& worker, const EndpointReport& report) {
  Result<std::unique_ptr<ucp::Worker>> peer = ucp::Worker::create(ctx);
  if (!peer.ok()) {
    std::cerr << "mc_info: cannot create the loopback worker: " << ucs::status_string(peer.status())
              << "\n";
    return 1;
  }
  Result<std::unique_ptr<ucp::Endpoint>> ep = worker.ep_create((*peer)->address());
  if (!ep.ok()) {
    // Unreachable (e.g. MC_TLS=self: self reaches only its own worker):
    // still show why every candidate was refused.
    std::cerr << "mc_info: no endpoint to the loopback worker: " << ucs::status_string(ep.status())
              << "\n";
    (void)report_address(worker, (*peer)->address(), report);
    return 1;
  }
  const ucp::EndpointImpl& e = ucp::impl(**ep);
  print_report(e.peer(), e.lanes(), &e.protocols(), report);
  if (report.lanes && !report.json) print_paths(ctx, **ep);
  return 0;
}

}  // namespace

int print_ucp_endpoint(const std::string& peer, const EndpointReport& report) {
  std::vector<uint8_t> packed;
  if (peer != "loopback" && !read_peer(peer, &packed)) {
    std::cerr << "mc_info: '" << peer
              << "' is neither 'loopback', nor hex, nor a file holding a hex worker address\n";
    return 1;
  }
  Result<std::unique_ptr<ucp::Context>> ctx = ucp::Context::create();
  if (!ctx.ok()) {
    std::cerr << "mc_info: cannot create a context: " << ucs::status_string(ctx.status()) << "\n";
    return 1;
  }
  Result<std::unique_ptr<ucp::Worker>> worker = ucp::Worker::create(**ctx);
  if (!worker.ok()) {
    std::cerr << "mc_info: cannot create a worker: " << ucs::status_string(worker.status()) << "\n";
    return 1;
  }
  if (peer == "loopback") return report_loopback(**ctx, **worker, report);
  return report_address(**worker, packed, report);
}

int print_ucp_worker(bool json) {
  Result<std::unique_ptr<ucp::Context>> ctx = ucp::Context::create();
  if (!ctx.ok()) {
    std::cerr << "mc_info: cannot create a context: " << ucs::status_string(ctx.status()) << "\n";
    return 1;
  }
  if (!json) {
    std::cout << "# UCP resources:\n";
    (*ctx)->print(std::cout);
  }
  Result<std::unique_ptr<ucp::Worker>> worker = ucp::Worker::create(**ctx);
  if (!worker.ok()) {
    std::cerr << "mc_info: cannot create a worker: " << ucs::status_string(worker.status()) << "\n";
    return 1;
  }
  if (json) {
    print_worker_json(**ctx, **worker);
    return 0;
  }
  std::cout << "# worker " << std::hex << (*worker)->uuid() << std::dec << " ifaces:";
  for (const ucp::WorkerIface& wi : ucp::impl(**worker).ifaces()) {
    std::cout << " " << (*ctx)->resources()[wi.resource].name();
  }
  std::cout << "\n# worker address (hex, for -e / -p):\n"
            << hex_encode((*worker)->address()) << "\n";
  return 0;
}

}  // namespace mc::info
