// SPDX-License-Identifier: Apache-2.0
// Endpoint operations: put, get, active messages, flush, close. Each looks up
// its protocol and takes the range's immediate entry (one slice posted on
// its lane, proto/rma_proto.h) or plans its slices and hands a RequestOp to
// the worker.
#include <algorithm>
#include <cstring>

#include "ucp/core/endpoint.h"
#include "ucp/core/worker.h"
#include "ucp/proto/am_op.h"
#include "ucp/proto/flush_op.h"
#include "ucp/proto/rma_op.h"
#include "ucp/proto/rma_proto.h"
#include "ucp/proto/staging_op.h"
#include "ucs/log/log.h"

namespace mc::ucp {

namespace {

using proto::ProtoKind;

// `dev` is `name` or one of its ports ("mlx5_0:1" for "mlx5_0").
bool device_matches(const std::string& dev, const std::vector<std::string>& names) {
  for (const std::string& n : names) {
    if (dev == n || (dev.size() > n.size() && dev.starts_with(n) && dev[n.size()] == ':')) {
      return true;
    }
  }
  return false;
}

// "mlx5_0" of "mlx5_0:1".
std::string_view device_base(std::string_view dev) {
  return dev.substr(0, dev.find(':'));
}

// A failed lane comes after every rank lane_rank gives.
constexpr unsigned kFailedLaneRank = 10;

unsigned side_rank(const std::string& dev, const std::vector<std::string>& preferred,
                   const std::vector<std::string>& secondary) {
  if (preferred.empty() && secondary.empty()) return 0;
  if (device_matches(dev, preferred)) return 0;
  return device_matches(dev, secondary) ? 1 : 2;
}

// Healthy lanes first, then lower ranks (a stable sort keeps the selection's
// order among equals).
bool healthy_then_rank(const LaneRank& a, const LaneRank& b) {
  return a.healthy != b.healthy ? a.healthy : a.rank < b.rank;
}

void append_new(std::vector<size_t>* to, const std::vector<size_t>& from) {
  for (size_t lane : from) {
    if (std::find(to->begin(), to->end(), lane) == to->end()) to->push_back(lane);
  }
}

// Every lane a put or get may use, in the selection's order: what a rail
// preference ranks.
std::vector<size_t> rma_pool(const wireup::LaneSelection& sel) {
  std::vector<size_t> pool = sel.rma_lanes;
  append_new(&pool, sel.rma_bw_lanes);
  return pool;
}

}  // namespace

Status EndpointImpl::no_protocol(proto::Op op, uct::MemType mem) const {
  if (mem != uct::MemType::Host && !protocols_->table(op, false).ranges().empty()) {
    MC_LOG(error) << "ucp: cannot " << proto::op_name(op) << " " << uct::mem_type_name(mem)
                  << " memory to " << peer_.hostname
                  << ": memory type unsupported: no lane of the endpoint can access it"
                  << (op == proto::Op::Am
                          ? " (active messages are not staged)"
                          : ", and no memory-type transport (a copy transport to itself that "
                            "accesses it, such as cuda_copy) can stage it through host memory");
  } else {
    MC_LOG(error) << "ucp: no lane to " << peer_.hostname << " can " << proto::op_name(op);
  }
  return Status::Unsupported;
}

unsigned EndpointImpl::lane_rank(size_t lane, const RailPreference& rails) const {
  const wireup::Lane& l = selection_.lanes[lane];
  const wireup::LocalResource& local = worker_->local_resources()[l.local];
  if (local.dev_type != uct::DeviceType::Net) return 0;  // shared memory, self
  const std::string& remote = peer_.ifaces[l.remote].dev_name;
  const unsigned rank = side_rank(local.dev_name, rails.local_preferred, rails.local_secondary) +
                        side_rank(remote, rails.remote_preferred, rails.remote_secondary);
  if (!rails.same_device) return rank;
  return 2 * rank + (device_base(local.dev_name) == device_base(remote) ? 0 : 1);
}

std::vector<LaneRank> EndpointImpl::rank_lanes(const RailPreference& rails) const {
  const std::vector<size_t> pool = rma_pool(selection_);
  std::vector<LaneRank> out;
  for (size_t lane : pool) {
    out.push_back({lane, lane_rank(lane, rails), !is_error(runtime_[lane].status)});
  }
  std::stable_sort(out.begin(), out.end(), healthy_then_rank);
  for (LaneRank& r : out) {
    r.carries = r.healthy && (rails.round_robin || (out[0].healthy && r.rank == out[0].rank));
  }
  return out;
}

EndpointImpl::LanePlan EndpointImpl::lanes_for(proto::Op op, const proto::ProtoRange& range,
                                               const RailPreference* rails) const {
  LanePlan plan;
  plan.lanes = range.lanes;
  const bool multi = range.kind == ProtoKind::MultiZcopy;
  const bool am = op == proto::Op::Am;
  // The other rails stand by for a slice whose lane fails.
  if (!multi) append_new(&plan.lanes, am ? selection_.am_bw_lanes : selection_.rma_bw_lanes);
  plan.carrying = multi ? plan.lanes.size() : 1;
  if (am || !rails || rails->empty()) return plan;
  // Topology: the best-ranked healthy lanes carry, the others stand by in
  // rank order; a single-lane kind may move to any lane that puts and gets.
  if (!multi) append_new(&plan.lanes, selection_.rma_lanes);
  std::vector<LaneRank> ranked;
  for (size_t lane : plan.lanes) {
    ranked.push_back({lane, lane_rank(lane, *rails), !is_error(runtime_[lane].status)});
  }
  std::stable_sort(ranked.begin(), ranked.end(), healthy_then_rank);
  plan.lanes.clear();
  plan.carrying = 0;
  for (const LaneRank& r : ranked) {
    plan.lanes.push_back(r.lane);
    plan.rank.push_back(r.healthy ? r.rank : kFailedLaneRank);
    const bool best =
        r.healthy && (rails->round_robin || (r.rank == ranked[0].rank && ranked[0].healthy));
    if (best && (multi || plan.carrying == 0)) plan.carrying++;
  }
  plan.carrying = std::max<size_t>(plan.carrying, 1);
  return plan;
}

Result<std::shared_ptr<Request>> EndpointImpl::rma(proto::Op op, void* buffer, size_t length,
                                                   uint64_t remote_addr, const Rkey& rkey,
                                                   const RequestParams& params) {
  std::unique_lock guard = worker_->lock();
  if (closed_) return Status::Canceled;
  if (length > 0 && (!buffer || !rkey.contains(remote_addr, length))) {
    MC_LOG(error) << "ucp: " << proto::op_name(op) << " of " << length << " bytes at 0x" << std::hex
                  << remote_addr << " is outside the rkey's range [0x" << rkey.address() << ", +"
                  << std::dec << rkey.length() << ") or has no buffer";
    return Status::InvalidParam;
  }
  const bool registered = params.memh && params.memh->contains(buffer, length);
  // Unknown: ask the memory domains that detect memory types (their range
  // caches); the default, Host, costs nothing here.
  const uct::MemType mem = params.mem_type == uct::MemType::Unknown
                               ? worker_->detect_mem_type(buffer, length)
                               : params.mem_type;
  const proto::RmaChoice c = protocols_->route(op, registered, mem, length, rkey);
  switch (c.route) {
    case proto::RmaRoute::Table: break;
    case proto::RmaRoute::Staged:
      return rma_staged(op, *c.staging, buffer, length, remote_addr, rkey, params);
    case proto::RmaRoute::RemoteStaged:
      return rma_remote_staged(op, c.staging, buffer, length, remote_addr, params);
    case proto::RmaRoute::NoAmLane:
      MC_LOG(error) << "ucp: cannot " << proto::op_name(op) << " " << length << " bytes of "
                    << peer_.hostname << "'s memory: no lane reaches it and remote staging needs "
                    << "an active-message lane";
      return Status::Unsupported;
    case proto::RmaRoute::None: return no_protocol(op, mem);
  }
  const proto::ProtoRange* range = c.range;
  if (!ranks(params.rails)) {
    const proto::RmaEntry& entry = entries_[op == proto::Op::Put ? 0 : 1][static_cast<size_t>(mem)]
                                           [registered ? 1 : 0][c.index];
    if (std::shared_ptr<Request> r =
            rma_now(op, *range, entry, buffer, length, remote_addr, rkey, params)) {
      return r;
    }
  }
  return rma_submit(op, *range, buffer, length, remote_addr, rkey, params);
}

__attribute__((noinline)) Result<std::shared_ptr<Request>> EndpointImpl::rma_submit(
    proto::Op op, const proto::ProtoRange& range, void* buffer, size_t length, uint64_t remote_addr,
    const Rkey& rkey, const RequestParams& params) {
  proto::RmaParams p =
      rma_params(op, range, buffer, length, remote_addr, rkey, params.memh, params.rails);
  return worker_->submit(std::make_unique<proto::RmaOp>(&runtime_, std::move(p)), params, this);
}

proto::RmaParams EndpointImpl::rma_params(proto::Op op, const proto::ProtoRange& range,
                                          void* buffer, size_t length, uint64_t remote_addr,
                                          const Rkey& rkey, const MemHandle* memh,
                                          const RailPreference* rails) const {
  const ContextConfig& cfg = worker_->context().config();
  proto::RmaParams p;
  p.op = op;
  p.buffer = buffer;
  p.length = length;
  p.remote_addr = remote_addr;
  p.kind = range.kind;
  LanePlan plan = lanes_for(op, range, rails);
  p.lanes = std::move(plan.lanes);
  p.rkey = &rkey;
  p.memh = memh;
  p.exec = proto::ExecutorParams{p.lanes.size(), cfg.retry_cnt, cfg.slices_in_flight,
                                 std::move(plan.rank)};
  if (range.kind == ProtoKind::MultiZcopy) {
    const size_t slice =
        std::min(cfg.slice_size, proto::rma_fragment(op, p.kind, runtime_, p.lanes, length));
    p.slices = proto::cut_slices(length, slice, cfg.fragment_ratio);
    std::vector<double> bw;  // the carrying lanes share the slices
    for (size_t i = 0; i < plan.carrying; ++i) {
      bw.push_back(std::max(runtime_[p.lanes[i]].bandwidth, 1.0));
    }
    proto::assign_lanes(&p.slices, bw);
  } else {
    p.slices = proto::cut_slices(length, proto::rma_fragment(op, p.kind, runtime_, p.lanes, length),
                                 SIZE_MAX);
  }
  return p;
}

// In line in both callers: put_first_now's constants (a put, no
// registration, no slot) leave only the short or bcopy call.
__attribute__((always_inline)) inline Status EndpointImpl::post_now(
    proto::Op op, proto::ProtoKind kind, const proto::RmaEntry& entry, void* buffer, size_t length,
    uint64_t remote_addr, const Rkey& rkey, const MemHandle* memh,
    proto::PostedSliceOp::Slot* slot) {
  if (length == 0 || length > entry.max) return Status::Unsupported;
  const proto::LaneRuntime& lr = runtime_[entry.lane];
  const uct::Rkey* urkey = rkey.for_lane(entry.lane);
  if (is_error(lr.status) || !urkey) return Status::Unsupported;
  const proto::SliceCall call = proto::slice_call(op, kind, lr.attr, length);
  const uct::MemHandle* umemh = nullptr;
  if (call == proto::SliceCall::Zcopy) {
    // Zero-copy from the caller's registration only; one the lane would
    // have to make (and keep until the end) is the general path's.
    if (memh && memh->contains(buffer, length)) umemh = memh->uct_memh(lr.md_index);
    if (!umemh) return Status::Unsupported;
  }
  const bool completes_later =
      call == proto::SliceCall::Zcopy || (call == proto::SliceCall::Bcopy && op == proto::Op::Get);
  if (call == proto::SliceCall::None || (completes_later && !slot)) return Status::Unsupported;
  if (completes_later) slot->reset();
  const Status s = proto::post_slice(op, call, lr, buffer, length, remote_addr, *urkey, umemh,
                                     completes_later ? &slot->comp : nullptr);
  if (s == Status::InProgress && completes_later) {
    slot->lane = &lr;  // its bytes are done when it fires
    slot->length = length;
  }
  return s;
}

std::shared_ptr<Request> EndpointImpl::rma_now(proto::Op op, const proto::ProtoRange& range,
                                               const proto::RmaEntry& entry, void* buffer,
                                               size_t length, uint64_t remote_addr,
                                               const Rkey& rkey, const RequestParams& params) {
  proto::PostedSliceOp::SlotCache& slots = worker_->slots();
  std::unique_ptr<proto::PostedSliceOp::Slot> slot = slots.take();
  const Status s =
      post_now(op, range.kind, entry, buffer, length, remote_addr, rkey, params.memh, slot.get());
  if (s != Status::InProgress) {
    slots.give(std::move(slot));
    return s == Status::Ok ? worker_->completed_request(params) : nullptr;  // null: nothing done
  }
  // Should it fail, the general op redoes the whole put or get (a single
  // slice) on the lanes as they are by then. `range` lives in protocols_,
  // `rkey` as long as the request (the caller's contract).
  slot->op = op;
  slot->range = &range;
  slot->buffer = buffer;
  slot->remote_addr = remote_addr;
  slot->rkey = &rkey;
  slot->memh = params.memh;
  auto retry = [this](const proto::PostedSliceOp::Slot& s) {
    return std::unique_ptr<proto::RequestOp>(std::make_unique<proto::RmaOp>(
        &runtime_,
        rma_params(s.op, *s.range, s.buffer, s.length, s.remote_addr, *s.rkey, s.memh, nullptr)));
  };
  return worker_->submit(std::make_unique<proto::PostedSliceOp>(std::move(slot), &slots, retry),
                         params, this);
}

void EndpointImpl::build_entries() {
  const std::vector<size_t> pool = rma_pool(selection_);
  rails_rank_ = pool.size() >= 2 && std::any_of(pool.begin(), pool.end(), [&](size_t lane) {
                  const size_t local = selection_.lanes[lane].local;
                  return worker_->local_resources()[local].dev_type == uct::DeviceType::Net;
                });
  for (proto::Op op : {proto::Op::Put, proto::Op::Get}) {
    for (size_t m = 0; m < proto::kProtoMemTypes; ++m) {
      for (bool registered : {false, true}) {
        entries_[op == proto::Op::Put ? 0 : 1][m][registered ? 1 : 0] =
            proto::rma_entries(protocols_->table(op, registered, static_cast<uct::MemType>(m)),
                               runtime_, selection_.rma_bw_lanes);
      }
    }
  }
  // put_nbx's entry in line: the first range of both host put tables when
  // they agree on it (a message there goes the same way registered or not)
  // and it completes in the call (short, bcopy).
  first_put_ = {};
  put_now_max_ = 0;
  const std::vector<proto::RmaEntry>& unreg = entries_[0][0][0];
  const std::vector<proto::RmaEntry>& reg = entries_[0][0][1];
  const proto::ProtoTable& t = protocols_->table(proto::Op::Put, false);
  const proto::ProtoTable& rt = protocols_->table(proto::Op::Put, true);
  const proto::ProtoKind kind = unreg.empty() ? proto::ProtoKind::Zcopy : t.ranges()[0].kind;
  if ((kind != proto::ProtoKind::Short && kind != proto::ProtoKind::Bcopy) || reg.empty() ||
      rt.ranges()[0].kind != kind || unreg[0].lane != reg[0].lane || t.ranges()[0].min > 1 ||
      rt.ranges()[0].min > 1) {
    return;
  }
  first_put_.kind = kind;
  first_put_.entry = {unreg[0].lane,
                      std::min({unreg[0].max, reg[0].max, t.ranges()[0].max, rt.ranges()[0].max})};
  put_now_max_ = first_put_.entry.max;
}

// rma()'s checks for what first_put_ covers, without the table lookup,
// then its immediate entry.
bool EndpointImpl::put_first_now(const void* buffer, size_t length, uint64_t remote_addr,
                                 const Rkey& rkey, const RequestParams& params) {
  if (params.mem_type != uct::MemType::Host || ranks(params.rails)) return false;
  std::unique_lock guard = worker_->lock();
  if (closed_ || !buffer || !rkey.contains(remote_addr, length) ||
      rkey.mem_type() != uct::MemType::Host) {
    return false;
  }
  // No slot: only what completes in the call (short, bcopy) is done here.
  if (post_now(proto::Op::Put, first_put_.kind, first_put_.entry, const_cast<void*>(buffer), length,
               remote_addr, rkey, nullptr, nullptr) != Status::Ok) {
    return false;
  }
  if (params.callback) params.callback(Status::Ok);
  return true;
}

// Endpoint::put_nbx's two calls. put_now is the path of the smallest puts:
// put_first_now is folded into it (flatten: no second call there).
[[gnu::flatten]] bool Endpoint::put_now(const void* buffer, size_t length, uint64_t remote_addr,
                                        const Rkey& rkey, const RequestParams& params) {
  return impl(*this).put_first_now(buffer, length, remote_addr, rkey, params);
}

Result<std::shared_ptr<Request>> Endpoint::put(const void* buffer, size_t length,
                                               uint64_t remote_addr, const Rkey& rkey,
                                               const RequestParams& params) {
  return impl(*this).rma(proto::Op::Put, const_cast<void*>(buffer), length, remote_addr, rkey,
                         params);
}

Result<std::shared_ptr<Request>> EndpointImpl::get_nbx(void* buffer, size_t length,
                                                       uint64_t remote_addr, const Rkey& rkey,
                                                       const RequestParams& params) {
  return rma(proto::Op::Get, buffer, length, remote_addr, rkey, params);
}

Result<std::shared_ptr<Request>> EndpointImpl::am_send_nbx(uint16_t id, const void* buffer,
                                                           size_t length,
                                                           const RequestParams& params) {
  std::unique_lock guard = worker_->lock();
  if (closed_) return Status::Canceled;
  const bool registered = params.memh && params.memh->contains(buffer, length);
  const proto::ProtoRange* range =
      protocols_->table(proto::Op::Am, registered, params.mem_type).lookup(length);
  if (!range) return no_protocol(proto::Op::Am, params.mem_type);
  if (std::shared_ptr<Request> r = am_now(id, *range, buffer, length, params)) return r;
  proto::ProtoRange eager;
  if (range->kind == ProtoKind::Rndv) {
    Result<std::shared_ptr<Request>> r =
        rndv_send(id, buffer, length, params, am_lane_now(range->lanes[0]));
    if (r.ok() || r.status() != Status::Unsupported) return r;
    eager = *range;  // the request to send does not fit: fragments instead
    eager.kind = ProtoKind::Bcopy;
    range = &eager;
  }
  const ContextConfig& cfg = worker_->context().config();
  proto::AmParams p;
  p.am_id = id;
  p.buffer = buffer;
  p.length = length;
  p.kind = range->kind;
  p.sender_uuid = worker_->uuid();
  p.message_id = worker_->new_message_id();
  p.memh = params.memh;
  size_t frag = SIZE_MAX;
  for (size_t lane : lanes_for(proto::Op::Am, *range).lanes) {
    const size_t cap = proto::am_fragment_capacity(runtime_[lane], p.kind, false);
    if (cap == 0) continue;  // this lane cannot carry a fragment
    p.lanes.push_back(lane);
    frag = std::min(frag, cap);
  }
  // A failed AM lane: every lane that carries active messages stands by,
  // the healthy ones first.
  auto down = [this](size_t lane) { return is_error(runtime_[lane].status); };
  if (std::any_of(p.lanes.begin(), p.lanes.end(), down)) {
    for (size_t lane : am_standby_lanes()) {
      const size_t cap = proto::am_fragment_capacity(runtime_[lane], p.kind, false);
      if (cap == 0) continue;
      p.lanes.push_back(lane);
      frag = std::min(frag, cap);
    }
    std::stable_partition(p.lanes.begin(), p.lanes.end(), [&down](size_t l) { return !down(l); });
  }
  if (p.lanes.empty()) return Status::Unsupported;
  const bool multi = p.kind == ProtoKind::MultiZcopy;
  if (length <= proto::am_fragment_capacity(runtime_[p.lanes[0]], p.kind, true) && !multi) {
    p.slices = {proto::Slice{0, length, 0}};
  } else if (multi) {
    p.slices = proto::cut_slices(length, std::min(frag, cfg.slice_size), cfg.fragment_ratio);
    std::vector<double> bw;
    for (size_t lane : p.lanes) bw.push_back(std::max(runtime_[lane].bandwidth, 1.0));
    proto::assign_lanes(&p.slices, bw);
  } else {
    p.slices = proto::cut_slices(length, frag, SIZE_MAX);
  }
  // A merged tail must still fit a fragment: cut again without merging.
  if (p.slices.size() > 1 &&
      std::any_of(p.slices.begin(), p.slices.end(),
                  [frag](const proto::Slice& s) { return s.length > frag; })) {
    p.slices = proto::cut_slices(length, frag, SIZE_MAX);
  }
  p.exec = proto::ExecutorParams{p.lanes.size(), cfg.retry_cnt, cfg.slices_in_flight};
  p.order = &am_order_;
  return worker_->submit(std::make_unique<proto::AmOp>(&runtime_, std::move(p)), params, this);
}

// What an AmOp does with a whole message that am_short sends on the range's
// first lane, without the op, its lanes and slices or a request of its own.
// Only while no earlier message of the endpoint waits for room (am_order_),
// so that it cannot pass one; anything else (NoResource, an error, a lane
// down) is left to the general path, nothing having been sent.
std::shared_ptr<Request> EndpointImpl::am_now(uint16_t id, const proto::ProtoRange& range,
                                              const void* buffer, size_t length,
                                              const RequestParams& params) {
  if (range.kind != ProtoKind::Short || range.lanes.empty() || !am_order_.empty()) {
    return nullptr;
  }
  const proto::LaneRuntime& lr = runtime_[range.lanes[0]];
  // The lane AmOp would take first: up, and able to carry a fragment.
  if (is_error(lr.status) || proto::am_fragment_capacity(lr, range.kind, false) == 0 ||
      !proto::am_short_fits(lr, length) ||
      proto::am_short_whole(lr, id, buffer, length) != Status::Ok) {
    return nullptr;
  }
  lr.local_completions = true;
  return worker_->completed_request(params);
}

Result<std::shared_ptr<Request>> EndpointImpl::flush(const RequestParams& params) {
  std::unique_lock guard = worker_->lock();
  std::vector<proto::FlushTarget> targets;
  for (size_t lane = 0; lane < runtime_.size(); ++lane) {
    const proto::LaneRuntime* rt = &runtime_[lane];
    targets.push_back([rt](uct::Completion* comp) {
      // A failed lane has nothing to flush: its slices went to other lanes.
      return is_error(rt->status) ? Status::Ok : rt->ep->flush(comp);
    });
  }
  const uint64_t seq = worker_->next_seq();
  WorkerImpl* w = worker_;
  auto op = std::make_unique<proto::FlushOp>(
      [w, this, seq] { return w->completed_before(this, seq); }, std::move(targets),
      [this](size_t lane) {
        return is_error(runtime_[lane].status) && !runtime_[lane].local_completions;
      },
      losses_.take());
  return worker_->submit(std::move(op), params, this);
}

Result<std::shared_ptr<Request>> EndpointImpl::close(CloseMode mode, const RequestParams& params) {
  std::unique_lock guard = worker_->lock();
  if (closed_) return Status::Canceled;
  if (mode == CloseMode::Force) {
    cancel_requests();
    closed_ = true;
    return worker_->submit(
        std::make_unique<proto::FlushOp>(nullptr, std::vector<proto::FlushTarget>{}), params,
        nullptr);
  }
  Result<std::shared_ptr<Request>> r = flush(params);
  closed_ = true;
  return r;
}

}  // namespace mc::ucp
