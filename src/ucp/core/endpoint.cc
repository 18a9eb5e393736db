// SPDX-License-Identifier: Apache-2.0
// Endpoint: lanes, rkeys, close and destruction.
#include "ucp/api/endpoint.h"

#include <sstream>

#include "ucp/api/worker.h"
#include "ucp/core/rkey_container.h"
#include "ucp/proto/request_op.h"
#include "ucs/log/log.h"

namespace mc::ucp {

Endpoint::Endpoint(Worker* worker, wireup::WorkerAddress peer, wireup::LaneSelection selection)
    : worker_(worker), peer_(std::move(peer)), selection_(std::move(selection)) {}

Status Endpoint::connect() {
  const Context& ctx = worker_->context();
  for (size_t lane = 0; lane < selection_.lanes.size(); ++lane) {
    const wireup::Lane& l = selection_.lanes[lane];
    const wireup::AddressEntry& remote = peer_.ifaces[l.remote];
    const WorkerIface& wi = worker_->ifaces_[static_cast<size_t>(worker_->iface_of(l.local))];
    Result<std::unique_ptr<uct::Endpoint>> ep =
        wi.iface->ep_create(remote.device_addr, remote.iface_addr);
    if (!ep.ok()) {
      MC_LOG(error) << "ucp: cannot connect lane " << lane << " ("
                    << selection_.candidate_of(lane).name
                    << "): " << ucs::status_string(ep.status());
      return ep.status();
    }
    const ResourceInfo& r = ctx.resources()[wi.resource];
    proto::LaneRuntime rt;
    rt.ep = ep->get();
    rt.md = ctx.mds()[r.md_index].md.get();
    rt.md_index = r.md_index;
    rt.attr = wi.attr;
    rt.bandwidth = selection_.candidate_of(lane).bandwidth;
    runtime_.push_back(rt);
    worker_->uct_eps_[ep->get()] = {this, lane};
    uct_eps_.push_back(std::move(*ep));
  }
  protocols_ = worker_->protocols_for(selection_);
  return Status::Ok;
}

Endpoint::~Endpoint() {
  std::unique_lock guard = worker_->lock();
  cancel_requests();
  uct_eps_.clear();
  // Nothing the destroyed UCT endpoints had in flight will complete now.
  for (const std::shared_ptr<Request>& r : worker_->active_) {
    if (r->ep_ != this) continue;
    r->op_->orphan();
    r->ep_ = nullptr;
  }
  worker_->detach(this);
}

void Endpoint::cancel_requests() {
  for (size_t i = 0; i < worker_->active_.size(); ++i) {
    std::shared_ptr<Request> r = worker_->active_[i];
    if (r->ep_ == this) r->cancel();
  }
}

void Endpoint::on_lane_error(size_t lane, Status status) {
  if (lane >= runtime_.size() || is_error(runtime_[lane].status)) return;
  MC_LOG(warn) << "ucp: lane " << lane << " (" << selection_.candidate_of(lane).name << ") to "
               << peer_.hostname << " failed: " << ucs::status_string(status);
  runtime_[lane].status = status;
}

Rkey::~Rkey() = default;

Result<std::unique_ptr<Rkey>> Endpoint::rkey_unpack(std::span<const uint8_t> packed) const {
  std::unique_lock guard = worker_->lock();
  std::string why;
  Result<RkeyContainer> c = rkey_container_unpack(packed, &why);
  if (!c.ok()) {
    MC_LOG(error) << "ucp: cannot unpack rkey: " << why;
    return c.status();
  }
  std::unique_ptr<Rkey> rkey(new Rkey());
  rkey->address_ = c->address;
  rkey->length_ = c->length;
  size_t found = 0;
  for (size_t lane = 0; lane < runtime_.size(); ++lane) {
    const std::string& md_name = peer_.ifaces[selection_.lanes[lane].remote].md_name;
    std::unique_ptr<uct::Rkey> key;
    for (const auto& [name, bytes] : c->entries) {
      if (name != md_name) continue;
      Result<std::unique_ptr<uct::Rkey>> r = runtime_[lane].md->rkey_unpack(bytes);
      if (!r.ok()) return r.status();  // the md logged why
      key = std::move(*r);
      ++found;
      break;
    }
    rkey->lanes_.push_back(std::move(key));
  }
  if (found == 0) {
    MC_LOG(error) << "ucp: the rkey holds no key for the memory domain of any lane to "
                  << peer_.hostname;
    return Status::Unreachable;
  }
  return rkey;
}

void Endpoint::print(std::ostream& os) const {
  os << "endpoint to worker " << std::hex << peer_.uuid << std::dec << " on " << peer_.hostname
     << "\n lanes:\n";
  selection_.print(os);
  os << " protocols";
  protocols_->print(os);
}

}  // namespace mc::ucp
