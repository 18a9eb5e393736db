// SPDX-License-Identifier: Apache-2.0
// Endpoint: lanes, rkeys, close and destruction.
#include "ucp/core/endpoint.h"

#include <algorithm>
#include <sstream>

#include "ucp/core/rkey_container.h"
#include "ucp/core/worker.h"
#include "ucp/proto/request_op.h"
#include "ucs/log/log.h"

namespace mc::ucp {

EndpointImpl::EndpointImpl(WorkerImpl* worker, wireup::WorkerAddress peer,
                           wireup::LaneSelection selection)
    : worker_(worker), peer_(std::move(peer)), selection_(std::move(selection)) {
  done_ = worker->done_request();
}

Status EndpointImpl::connect() {
  const Context& ctx = worker_->context();
  reconnect_.resize(selection_.lanes.size());
  Status first_error = Status::Ok;
  for (size_t lane = 0; lane < selection_.lanes.size(); ++lane) {
    WorkerIface& wi = worker_->lane_iface(selection_.lanes[lane].local);
    if (!counted_) ++wi.lanes;  // progressed on every call from now on
    const ResourceInfo& r = ctx.resources()[wi.resource];
    proto::LaneRuntime rt;
    rt.md = ctx.mds()[r.md_index].md.get();
    rt.md_index = r.md_index;
    rt.attr = wi.attr;
    rt.bandwidth = selection_.candidate_of(lane).bandwidth;
    Result<std::unique_ptr<uct::Endpoint>> ep = lane_connect(lane);
    if (ep.ok()) {
      rt.ep = ep->get();
      worker_->map_uct_ep(ep->get(), this, lane);
      uct_eps_.push_back(std::move(*ep));
    } else {
      // The other lanes may do: decided below, once every lane was tried.
      rt.status = ep.status();
      if (first_error == Status::Ok) first_error = ep.status();
      uct_eps_.push_back(nullptr);
    }
    runtime_.push_back(rt);
  }
  counted_ = true;
  protocols_ = worker_->protocols_for(selection_);
  build_entries();
  std::string what;
  if (missing_lanes(&what)) {
    MC_LOG(error) << "ucp: cannot connect to worker " << std::hex << peer_.uuid << std::dec
                  << " on " << peer_.hostname << ": " << what << " ("
                  << ucs::status_string(first_error) << ")";
    return first_error;
  }
  for (size_t lane = 0; lane < runtime_.size(); ++lane) {
    const Status s = runtime_[lane].status;
    if (is_error(s)) lane_failed(lane, s, std::string("could not connect: ") + status_string(s));
  }
  return Status::Ok;
}

bool EndpointImpl::missing_lanes(std::string* what) const {
  auto none_up = [this](const std::vector<size_t>& lanes) {
    return std::none_of(lanes.begin(), lanes.end(),
                        [this](size_t l) { return !is_error(runtime_[l].status); });
  };
  std::vector<size_t> all(runtime_.size());
  for (size_t l = 0; l < all.size(); ++l) all[l] = l;
  std::vector<size_t> rma = selection_.rma_lanes;
  rma.insert(rma.end(), selection_.rma_bw_lanes.begin(), selection_.rma_bw_lanes.end());
  std::vector<size_t> am = selection_.am_bw_lanes;
  if (selection_.am_lane >= 0) am.push_back(static_cast<size_t>(selection_.am_lane));
  const std::vector<size_t> standby = am_standby_lanes();
  am.insert(am.end(), standby.begin(), standby.end());
  if (none_up(all)) {
    *what = "no lane connected";
  } else if (!rma.empty() && none_up(rma)) {
    *what = "no lane that puts and gets connected";
  } else if (selection_.am_lane >= 0 && none_up(am)) {
    *what = "no lane that carries active messages connected";
  } else {
    return false;
  }
  return true;
}

std::vector<size_t> EndpointImpl::am_standby_lanes() const {
  std::vector<size_t> out;
  const std::vector<size_t>& rails = selection_.am_bw_lanes;
  for (size_t l = 0; l < selection_.lanes.size(); ++l) {
    if (static_cast<int>(l) == selection_.am_lane) continue;
    if (std::find(rails.begin(), rails.end(), l) != rails.end()) continue;
    if (selection_.candidate_of(l).am_ok) out.push_back(l);
  }
  return out;
}

size_t EndpointImpl::am_lane_now(size_t preferred) const {
  if (preferred < runtime_.size() && !is_error(runtime_[preferred].status)) return preferred;
  std::vector<size_t> lanes = selection_.am_bw_lanes;
  const std::vector<size_t> standby = am_standby_lanes();
  lanes.insert(lanes.end(), standby.begin(), standby.end());
  for (size_t l : lanes) {
    if (!is_error(runtime_[l].status)) return l;
  }
  return preferred;
}

EndpointImpl::~EndpointImpl() {
  std::unique_lock guard = worker_->lock();
  if (counted_) {
    for (const wireup::Lane& l : selection_.lanes) {
      --worker_->lane_iface(l.local).lanes;
    }
  }
  cancel_requests();
  uct_eps_.clear();
  reconnect_.clear();
  // Nothing the destroyed UCT endpoints had in flight will complete now.
  worker_->detach(this);
}

void EndpointImpl::cancel_requests() {
  worker_->cancel_requests(this);
}

void EndpointImpl::on_lane_error(size_t lane, Status status) {
  if (lane >= runtime_.size() || is_error(runtime_[lane].status)) return;
  lane_failed(lane, status, std::string("failed: ") + ucs::status_string(status));
}

Rkey::~Rkey() = default;

Result<std::unique_ptr<Rkey>> EndpointImpl::rkey_unpack(std::span<const uint8_t> packed) const {
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
  rkey->mem_type_ = static_cast<uct::MemType>(c->mem_type);
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
  // Memory of another type that no lane reaches (GPU memory over tcp or sm):
  // its puts and gets are staged by the peer (remote staging).
  if (found == 0 && rkey->mem_type_ == uct::MemType::Host) {
    MC_LOG(error) << "ucp: the rkey holds no key for the memory domain of any lane to "
                  << peer_.hostname;
    return Status::Unreachable;
  }
  return rkey;
}

void EndpointImpl::print(std::ostream& os) const {
  os << "endpoint to worker " << std::hex << peer_.uuid << std::dec << " on " << peer_.hostname
     << "\n lanes:\n";
  selection_.print(os);
  print_lane_state(os);
  os << " protocols";
  protocols_->print(os);
}

void EndpointImpl::lane_counters(std::vector<LaneCounters>* out) const {
  out->clear();
  for (size_t i = 0; i < selection_.lanes.size() && i < runtime_.size(); ++i) {
    out->push_back({i, selection_.lanes[i].local, !is_error(runtime_[i].status),
                    runtime_[i].rma_bytes, runtime_[i].rma_done_bytes});
  }
}

std::vector<LaneInfo> EndpointImpl::lane_info() const {
  std::vector<LaneCounters> counters;
  lane_counters(&counters);
  const std::vector<ResourceInfo>& local = worker_->context().resources();
  std::vector<LaneInfo> out;
  for (const LaneCounters& c : counters) {
    const wireup::AddressEntry& remote = peer_.ifaces[selection_.lanes[c.lane].remote];
    out.push_back({c, local[c.local_resource].name(), remote.tl_name + "/" + remote.dev_name});
  }
  return out;
}

// Endpoint: the application's view, each method EndpointImpl's.

Endpoint::~Endpoint() = default;

Result<std::shared_ptr<Request>> Endpoint::get_nbx(void* buffer, size_t length,
                                                   uint64_t remote_addr, const Rkey& rkey,
                                                   const RequestParams& params) {
  return impl(*this).get_nbx(buffer, length, remote_addr, rkey, params);
}

Result<std::shared_ptr<Request>> Endpoint::am_send_nbx(uint16_t id, const void* buffer,
                                                       size_t length, const RequestParams& params) {
  return impl(*this).am_send_nbx(id, buffer, length, params);
}

Result<std::shared_ptr<Request>> Endpoint::flush(const RequestParams& params) {
  return impl(*this).flush(params);
}

Result<std::shared_ptr<Request>> Endpoint::close(CloseMode mode, const RequestParams& params) {
  return impl(*this).close(mode, params);
}

Result<std::unique_ptr<Rkey>> Endpoint::rkey_unpack(std::span<const uint8_t> packed) const {
  return impl(*this).rkey_unpack(packed);
}

void Endpoint::print(std::ostream& os) const {
  impl(*this).print(os);
}

std::vector<LaneRank> Endpoint::rank_lanes(const RailPreference& rails) const {
  return impl(*this).rank_lanes(rails);
}

std::vector<LaneInfo> Endpoint::lane_info() const {
  return impl(*this).lane_info();
}

void Endpoint::lane_counters(std::vector<LaneCounters>* out) const {
  impl(*this).lane_counters(out);
}

}  // namespace mc::ucp
