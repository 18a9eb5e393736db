// SPDX-License-Identifier: Apache-2.0
// Worker: endpoint creation from a packed address, and the cache of
// protocol tables per endpoint configuration.
#include <sstream>

#include "ucp/core/endpoint.h"
#include "ucp/core/worker.h"
#include "ucs/log/log.h"
#include "ucs/sys/sys.h"

namespace mc::ucp {

Result<std::unique_ptr<EndpointImpl>> WorkerImpl::ep_create(std::span<const uint8_t> address) {
  std::unique_lock guard = lock();
  std::string why;
  Result<wireup::WorkerAddress> peer = wireup::address_unpack(address, &why);
  if (!peer.ok()) {
    MC_LOG(error) << "ucp: cannot create an endpoint: invalid worker address: " << why;
    return peer.status();
  }
  const ContextConfig& cfg = context_->config();
  const wireup::LaneSelectParams params = lane_params(*peer);
  const std::vector<wireup::AddressEntry>& remote = peer->ifaces;
  auto reachable = [this, &remote](size_t li, size_t ri, std::string* reason) {
    const int k = iface_of(li);
    if (k < 0) return *reason = "no iface", false;
    return ifaces_[static_cast<size_t>(k)].iface->is_reachable(remote[ri].device_addr,
                                                               remote[ri].iface_addr, reason);
  };
  wireup::LaneSelection sel = wireup::select_lanes(local_, remote, reachable, params);
  if (sel.lanes.empty()) {
    std::ostringstream os;
    sel.print(os);
    MC_LOG(error) << "ucp: no lane reaches worker " << std::hex << peer->uuid << std::dec << " on "
                  << peer->hostname << ":\n"
                  << os.str();
    return Status::Unreachable;
  }
  std::unique_ptr<EndpointImpl> ep(new EndpointImpl(this, std::move(*peer), std::move(sel)));
  MC_RETURN_IF_ERROR(ep->connect());
  eps_.push_back(ep.get());
  if (cfg.proto_info) {
    std::ostringstream os;
    ep->print(os);
    MC_LOG(info) << os.str();
  }
  return ep;
}

wireup::LaneSelectParams WorkerImpl::lane_params(const wireup::WorkerAddress& peer) const {
  const ContextConfig& cfg = context_->config();
  wireup::LaneSelectParams params;
  params.max_rma_rails = cfg.max_rma_rails;
  params.max_eager_rails = cfg.max_eager_rails;
  params.mem_numa_node = numa_node_;
  if (peer.net_identity == ucs::net_identity()) params.loopback_rails = cfg.loopback_rails;
  return params;
}

std::shared_ptr<const proto::EpProtocols> WorkerImpl::protocols_for(
    const wireup::LaneSelection& sel) {
  // The tables depend on the lanes' local resources, the pairs' scores and
  // the roles: that is the key.
  std::ostringstream key;
  key.precision(17);
  for (const wireup::Lane& l : sel.lanes) {
    const wireup::Candidate& c = sel.candidates[l.candidate];
    key << l.local << ':' << l.roles << ':' << c.latency << ':' << c.bandwidth << ':' << c.overhead
        << ';';
  }
  key << sel.am_lane << '|';
  for (size_t i : sel.rma_lanes) key << i << ',';
  key << '|';
  for (size_t i : sel.rma_bw_lanes) key << i << ',';
  key << '|';
  for (size_t i : sel.am_bw_lanes) key << i << ',';
  auto it = proto_cache_.find(key.str());
  if (it != proto_cache_.end()) return it->second;
  const ContextConfig& cfg = context_->config();
  proto::EpProtoParams params;
  params.slice_size = cfg.slice_size;
  params.bcopy_thresh = cfg.bcopy_thresh;
  params.zcopy_thresh = cfg.zcopy_thresh;
  params.rndv_thresh = cfg.rndv_thresh;
  for (size_t m = 0; m < proto::kProtoMemTypes; ++m) {
    params.frag_size[m] = rndv_frag_size(cfg, static_cast<uct::MemType>(m));
  }
  params.staging_depth = cfg.staging_depth;
  auto tables =
      std::make_shared<const proto::EpProtocols>(proto::EpProtocols::build(sel, local_, params));
  proto_cache_.emplace(key.str(), tables);
  return tables;
}

}  // namespace mc::ucp
