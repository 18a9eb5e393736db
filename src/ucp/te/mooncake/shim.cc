// SPDX-License-Identifier: Apache-2.0
// What libtransfer_engine's C and C++ APIs share (shim.h).
#include "shim.h"

#include <sstream>
#include <vector>

#include "ucs/datastruct/json.h"
#include "ucs/log/log.h"
#include "ucs/status/status.h"
#include "ucs/topo/topo.h"

namespace mc::mooncake_api {

int task_status(const mc::TransferStatus& status) {
  if (status.s == mc::INVALID && status.error == static_cast<int>(ucs::Status::Rejected)) {
    return mc::FAILED;
  }
  return status.s;
}

int discover_topology() {
  ucs::Result<ucs::Topology> topo = ucs::Topology::discover();
  if (!topo.ok()) {
    MC_LOG(error) << "discoverTopology: " << topo.status();
    return static_cast<int>(topo.status());
  }
  MC_LOG(info) << "discoverTopology: " << topo->numa_nodes().size() << " NUMA node(s), "
               << topo->nics().size() << " NIC(s), " << topo->gpus().size()
               << " GPU(s); priority matrix " << topo->priority_matrix_json()
               << " (a started engine keeps the topology it started with)";
  return 0;
}

std::string show_links(const mc::TransferEngine& engine, bool json) {
  std::vector<mc::NicLoadStat> stats;
  const int rc = engine.getNicLoadStats(stats);
  ucs::Result<ucs::Topology> topo = ucs::Topology::discover();
  const std::string matrix = topo.ok() ? topo->priority_matrix_json() : "{}";
  if (!json) {
    std::ostringstream os;
    if (rc != 0) os << "engine not started\n";
    for (const mc::NicLoadStat& s : stats) {
      os << s.device_name << ": inflight_bytes " << s.inflight_bytes << ", ewma_bandwidth_bps "
         << s.ewma_bandwidth_bps << "\n";
    }
    os << "priority matrix: " << matrix << "\n";
    return os.str();
  }
  ucs::json::Value devices = ucs::json::Value::array();
  for (const mc::NicLoadStat& s : stats) {
    ucs::json::Value d = ucs::json::Value::object();
    d.set("name", s.device_name);
    d.set("inflight_bytes", static_cast<uint64_t>(s.inflight_bytes));
    d.set("ewma_bandwidth_bps", s.ewma_bandwidth_bps);
    devices.push_back(std::move(d));
  }
  ucs::json::Value out = ucs::json::Value::object();
  out.set("devices", std::move(devices));
  ucs::Result<ucs::json::Value> m = ucs::json::parse(matrix);
  out.set("priority_matrix", m.ok() ? std::move(*m) : ucs::json::Value::object());
  return ucs::json::write(out);
}

void note_no_graceful_shutdown() {
  MC_LOG(warn) << "enableGracefulShutdown: not offered: mc installs no SIGTERM / SIGINT handler "
                  "(a library does not take the process's signals); destroyTransferEngine "
                  "removes the engine's metadata, call it from your own handler's exit path";
}

}  // namespace mc::mooncake_api
