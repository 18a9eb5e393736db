// SPDX-License-Identifier: Apache-2.0
// TransferEngine::Impl: topology-aware path choice. Each side's NIC priority
// matrix (ucs/topo: discovered, or MC_TOPO_PRIORITY_MATRIX) names the
// preferred and secondary devices of a memory location; this engine's matrix
// is published in its segment descriptor. A task from local memory at
// location L to a remote buffer at location R asks UCP for the lanes whose
// local device the local matrix prefers for L and whose remote device the
// remote matrix prefers for R (ucp::RailPreference); secondary devices take
// over when the preferred lanes fail, other devices after them.
#include <algorithm>
#include <set>
#include <sstream>

#include "ucp/te/engine.h"
#include "ucs/log/log.h"

namespace mc {

namespace {

std::string join(const std::vector<std::string>& names) {
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "" : ",") + n;
  return s.empty() ? "none" : s;
}

}  // namespace

void TransferEngine::Impl::load_topology(const ucs::config::Sources& sources,
                                         ucp::ContextConfig* ucp_config) {
  Result<ucs::Topology> topo = ucs::Topology::discover(sources);
  if (!topo.ok()) {
    MC_LOG(warn) << "transfer engine: topology discovery failed (" << topo.status()
                 << "); buffers get no preferred devices";
    return;
  }
  std::set<std::string> nics;
  for (const auto& [loc, entry] : topo->priority_matrix()) {
    priority_matrix_[loc] = {topo->with_netdevs(entry.preferred),
                             topo->with_netdevs(entry.secondary)};
    nics.insert(entry.preferred.begin(), entry.preferred.end());
    nics.insert(entry.secondary.begin(), entry.secondary.end());
  }
  // Every NIC of the matrix should be a rail of the endpoints, so that each
  // buffer's preferred NICs are there to choose; MC_MAX_RMA_RAILS, when set,
  // has the last word.
  if (!sources.lookup("MC_MAX_RMA_RAILS") && nics.size() > ucp_config->max_rma_rails) {
    ucp_config->max_rma_rails = std::min<size_t>(nics.size(), 16);
    MC_LOG(info) << "transfer engine: " << ucp_config->max_rma_rails
                 << " RMA rails per endpoint, one per NIC of the priority matrix "
                    "(MC_MAX_RMA_RAILS overrides)";
  }
}

ucp::RailPreference TransferEngine::Impl::rail_preference(
    const std::string& local, const std::string& remote,
    const metadata::PriorityMatrix& remote_matrix) const {
  ucp::RailPreference rails;
  if (auto l = priority_matrix_.find(local); l != priority_matrix_.end()) {
    rails.local_preferred = l->second.first;
    rails.local_secondary = l->second.second;
  }
  if (auto r = remote_matrix.find(remote); r != remote_matrix.end()) {
    rails.remote_preferred = r->second.first;
    rails.remote_secondary = r->second.second;
  }
  rails.same_device = config_.dest_device_affinity;
  rails.round_robin = config_.path_roundrobin;
  return rails;
}

const ucp::RailPreference* TransferEngine::Impl::rails_locked(RemoteSegment& seg,
                                                              const Task& task) {
  static const std::string kUnregistered;
  const std::string& local = task.local ? task.local->location : kUnregistered;
  // Tasks come in runs of the same buffers: the last answer first, without
  // building the key.
  if (seg.last_rails && seg.last_rails_index == task.buffer_index &&
      seg.last_rails_local == local) {
    return seg.last_rails->empty() ? nullptr : seg.last_rails;
  }
  const std::string& remote = seg.desc.buffers[task.buffer_index].name;
  auto key = std::make_pair(local, remote);
  auto it = seg.rails.find(key);
  if (it == seg.rails.end()) {
    it = seg.rails.emplace(key, rail_preference(local, remote, seg.desc.priority_matrix)).first;
  }
  seg.last_rails = &it->second;
  seg.last_rails_index = task.buffer_index;
  seg.last_rails_local = local;
  return it->second.empty() ? nullptr : &it->second;
}

void TransferEngine::Impl::log_path_locked(te::EpEntry& entry, const RemoteSegment& seg,
                                           const Task& task, const ucp::RailPreference* rails) {
  static const std::string kUnregistered = "unregistered";
  const std::string& local = task.local ? task.local->location : kUnregistered;
  const std::string& remote = seg.desc.buffers[task.buffer_index].name;
  // The pair logged last is logged: no key to build for it.
  if (entry.last_logged && entry.last_logged->first == local &&
      entry.last_logged->second == remote) {
    return;
  }
  const auto [logged, fresh] = entry.paths_logged.insert({local, remote});
  entry.last_logged = &*logged;
  if (!fresh) return;
  std::ostringstream os;
  os << "transfer engine: path to segment '" << seg.name << "' for " << local << " -> " << remote
     << " memory: ";
  if (!rails) {
    os << "no device preference (no priority matrix entry on either side, "
          "MC_ENABLE_DEST_DEVICE_AFFINITY and MC_PATH_ROUNDROBIN off); lanes as UCP chose them";
  } else {
    const std::vector<ucp::LaneRank> ranked = entry.ep->rank_lanes(*rails);
    const std::vector<ucp::LaneInfo> lanes = entry.ep->lane_info();
    for (size_t i = 0; i < ranked.size(); ++i) {
      const ucp::LaneRank& r = ranked[i];
      const ucp::LaneInfo& lane = lanes[r.lane];
      os << (i ? ", " : "") << lane.local_device << " -> " << lane.remote_device << " (rank "
         << r.rank << (r.healthy ? "" : ", failed") << (r.carries ? ", carries" : ", stand-by")
         << ")";
    }
    os << " [local preferred " << join(rails->local_preferred) << ", secondary "
       << join(rails->local_secondary) << "; remote preferred " << join(rails->remote_preferred)
       << ", secondary " << join(rails->remote_secondary)
       << (rails->same_device ? "; same-name remote device first" : "")
       << (rails->round_robin ? "; round robin over every healthy lane" : "") << "]";
  }
  MC_LOG(info) << os.str();
}

void TransferEngine::Impl::log_location_choice(const LocalBuffer& buf) const {
  auto it = priority_matrix_.find(buf.location);
  const bool known = it != priority_matrix_.end();
  MC_LOG(info) << "transfer engine: buffer " << buf.addr << " (" << buf.length << " bytes) at "
               << buf.location << ": preferred devices "
               << (known ? join(it->second.first) : "none") << ", secondary "
               << (known ? join(it->second.second) : "none");
}

int TransferEngine::Impl::segment_paths(SegmentHandle id, const void* local_addr,
                                        uint64_t remote_addr, std::vector<SegmentPathInfo>& out) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = segments_.find(id);
  if (it == segments_.end()) return static_cast<int>(Status::NoElem);
  out.clear();
  if (const RemoteSegment& seg = *it->second; seg.file) {
    // One lane: the nvmeof transport of this process to the file holding
    // remote_addr (an offset; the first file when it is in none).
    SegmentPathInfo info;
    info.local_device = "nvmeof/file";
    info.remote_device = seg.files.empty() ? "" : seg.files[0].path;
    for (const FileBuffer& f : seg.files) {
      if (remote_addr >= f.offset && remote_addr - f.offset < f.length) info.remote_device = f.path;
    }
    info.rank = 0;
    info.carries = true;
    info.healthy = true;
    info.bytes = seg.file_bytes;
    out.push_back(std::move(info));
    return 0;
  }
  te::EndpointStore::Entry e = endpoints_->get(id);
  if (!e || e->failed) return 0;  // no endpoint yet: opened at the first transfer
  std::string local_location, remote_location;
  if (const LocalBuffer* b = local_addr ? buffer_at_locked(local_addr) : nullptr) {
    local_location = b->location;
  }
  for (const metadata::BufferDesc& b : it->second->desc.buffers) {
    if (remote_addr >= b.addr && remote_addr - b.addr < b.length) remote_location = b.name;
  }
  const std::vector<ucp::LaneRank> ranked = e->ep->rank_lanes(
      rail_preference(local_location, remote_location, it->second->desc.priority_matrix));
  const std::vector<ucp::LaneInfo> lanes = e->ep->lane_info();
  for (const ucp::LaneRank& r : ranked) {
    const ucp::LaneInfo& lane = lanes[r.lane];
    SegmentPathInfo info;
    info.local_device = lane.local_device;
    info.remote_device = lane.remote_device;
    info.rank = static_cast<int>(r.rank);
    info.healthy = r.healthy;
    info.carries = r.carries;
    info.bytes = lane.rma_bytes;
    out.push_back(std::move(info));
  }
  return 0;
}

}  // namespace mc
