// SPDX-License-Identifier: Apache-2.0
// Protocol tables of an endpoint configuration.
#include "ucp/proto/ep_protocols.h"

#include <algorithm>

#include "ucp/proto/am_wire.h"

namespace mc::ucp::proto {

LanePerf lane_perf(Op op, const wireup::Candidate& c, const wireup::LocalResource& l, size_t lane) {
  const uct::IfaceAttr& a = l.attr;
  LanePerf p;
  p.lane = lane;
  p.latency = c.latency;
  p.overhead = a.overhead;
  p.bandwidth = c.bandwidth > 0 ? c.bandwidth : 1.0;
  p.reg_cost = l.reg_cost;
  switch (op) {
    case Op::Put:
      p.has_short = (a.cap & uct::kCapPutShort) && a.put.max_short > 0;
      p.has_bcopy = (a.cap & uct::kCapPutBcopy) && a.put.max_bcopy > 0;
      p.has_zcopy = (a.cap & uct::kCapPutZcopy) && a.put.max_zcopy > 0;
      p.max_short = a.put.max_short;
      p.max_bcopy = a.put.max_bcopy;
      p.max_zcopy = a.put.max_zcopy;
      break;
    case Op::Get:
      p.has_bcopy = (a.cap & uct::kCapGetBcopy) && a.get.max_bcopy > 0;
      p.has_zcopy = (a.cap & uct::kCapGetZcopy) && a.get.max_zcopy > 0;
      p.max_bcopy = a.get.max_bcopy;
      p.max_zcopy = a.get.max_zcopy;
      break;
    case Op::Am:
      p.has_short = (a.cap & uct::kCapAmShort) && a.am.max_short > kAmSingleHeader;
      p.has_bcopy = (a.cap & uct::kCapAmBcopy) && a.am.max_bcopy > kAmFragHeader;
      p.has_zcopy = (a.cap & uct::kCapAmZcopy) && a.am.max_zcopy > kAmFragHeader &&
                    a.am.max_hdr >= kAmFragHeader;
      p.max_short = p.has_short ? a.am.max_short - kAmSingleHeader : 0;
      p.max_bcopy = p.has_bcopy ? a.am.max_bcopy - kAmFragHeader : 0;
      p.max_zcopy = p.has_zcopy ? a.am.max_zcopy - kAmFragHeader : 0;  // header counted in
      break;
  }
  return p;
}

namespace {

LanePerf perf_of(Op op, const wireup::LaneSelection& sel,
                 const std::vector<wireup::LocalResource>& local, size_t lane) {
  const wireup::Candidate& c = sel.candidate_of(lane);
  return lane_perf(op, c, local[c.local], lane);
}

bool can_access(const wireup::LaneSelection& sel, const std::vector<wireup::LocalResource>& local,
                size_t lane, uct::MemType mem) {
  return (local[sel.candidate_of(lane).local].attr.access_mem_types & uct::mem_type_bit(mem)) != 0;
}

// The lane of single-lane protocols: the AM lane, or the best RMA lane; for
// memory it cannot access, the first other lane (RMA lanes, then rails) that
// can. -1: none.
int single_lane(Op op, const wireup::LaneSelection& sel,
                const std::vector<wireup::LocalResource>& local, uct::MemType mem) {
  const int first =
      op == Op::Am ? sel.am_lane : (sel.rma_lanes.empty() ? -1 : int(sel.rma_lanes[0]));
  if (first < 0 || can_access(sel, local, static_cast<size_t>(first), mem)) return first;
  if (op == Op::Am) return -1;  // active messages stay on their lane
  for (const std::vector<size_t>* v : {&sel.rma_lanes, &sel.rma_bw_lanes, &sel.gpu_lanes}) {
    for (size_t lane : *v) {
      if (can_access(sel, local, lane, mem)) return static_cast<int>(lane);
    }
  }
  return -1;
}

ProtoTable build_table(Op op, bool registered, uct::MemType mem, const wireup::LaneSelection& sel,
                       const std::vector<wireup::LocalResource>& local,
                       const EpProtoParams& params) {
  const bool am = op == Op::Am;
  const int single = single_lane(op, sel, local, mem);
  if (single < 0) return ProtoTable(op, {});
  auto perf = [&](size_t lane) {
    const wireup::Candidate& c = sel.candidate_of(lane);
    LanePerf p = lane_perf(op, c, local[c.local], lane);
    if (!can_access(sel, local, lane, mem)) p.has_short = p.has_bcopy = p.has_zcopy = false;
    return p;
  };
  ProtoSelectParams p;
  p.op = op;
  p.single = perf(static_cast<size_t>(single));
  const std::vector<size_t>& rails = am ? sel.am_bw_lanes : sel.rma_bw_lanes;
  if (rails.size() >= 2) {
    for (size_t lane : rails) {
      LanePerf r = perf(lane);
      if (r.has_zcopy) p.rails.push_back(r);
    }
    if (p.rails.size() < 2) p.rails.clear();
  }
  p.slice_size = params.slice_size;
  p.copy_bandwidth = params.copy_bandwidth;
  p.registered = registered;
  p.bcopy_thresh = params.bcopy_thresh;
  p.zcopy_thresh = params.zcopy_thresh;
  if (am && !sel.rma_lanes.empty() && can_access(sel, local, sel.rma_lanes[0], mem)) {
    // The receiver's get, modelled by ours over the same pair of resources:
    // the bandwidth of every rail when it has several.
    LanePerf g = perf_of(Op::Get, sel, local, sel.rma_lanes[0]);
    if (sel.rma_bw_lanes.size() >= 2) {
      double bw = 0;
      for (size_t lane : sel.rma_bw_lanes) bw += perf_of(Op::Get, sel, local, lane).bandwidth;
      g.bandwidth = bw;
    }
    g.lane = p.single.lane;
    p.rndv_get = g;
    p.rndv_thresh = params.rndv_thresh;
  }
  return select_protocols(p);
}

std::string size_text(size_t n) {
  if (n >= (size_t{1} << 20) && n % (size_t{1} << 20) == 0) {
    return std::to_string(n >> 20) + " MiB";
  }
  if (n >= 1024 && n % 1024 == 0) return std::to_string(n >> 10) + " KiB";
  return std::to_string(n) + " B";
}

}  // namespace

std::optional<Staging> plan_staging(const std::vector<wireup::LocalResource>& local,
                                    uct::MemType mem, size_t frag_size, size_t depth) {
  if (mem == uct::MemType::Host) return std::nullopt;
  const uint64_t need = uct::kCapConnectToSelf | uct::kCapPutZcopy | uct::kCapGetZcopy;
  const uct::MemTypeMask types = uct::mem_type_bit(mem) | uct::mem_type_bit(uct::MemType::Host);
  for (size_t i = 0; i < local.size(); ++i) {
    const uct::IfaceAttr& a = local[i].attr;
    if (!local[i].enabled || (a.cap & need) != need || (a.access_mem_types & types) != types) {
      continue;
    }
    Staging st;
    st.resource = i;
    st.name = local[i].name();
    // A fragment is one zero-copy operation of the copy transport.
    st.frag_size = std::min({frag_size, a.put.max_zcopy, a.get.max_zcopy});
    st.depth = std::max<size_t>(depth, 1);
    if (st.frag_size == 0) return std::nullopt;
    return st;
  }
  return std::nullopt;
}

EpProtocols EpProtocols::build(const wireup::LaneSelection& sel,
                               const std::vector<wireup::LocalResource>& local,
                               const EpProtoParams& params) {
  EpProtocols e;
  for (Op op : {Op::Put, Op::Get, Op::Am}) {
    for (size_t m = 0; m < kProtoMemTypes; ++m) {
      for (bool registered : {false, true}) {
        e.tables_[static_cast<size_t>(op)][m][registered ? 1 : 0] =
            build_table(op, registered, static_cast<uct::MemType>(m), sel, local, params);
      }
    }
  }
  for (size_t m = 1; m < kProtoMemTypes; ++m) {
    const auto mem = static_cast<uct::MemType>(m);
    // A GPU lane (cuda_ipc) reaches the peer's GPU memory only: the peer's
    // host memory is still staged.
    const int lane = single_lane(Op::Put, sel, local, mem);
    const bool gpu_only = lane >= 0 && std::find(sel.gpu_lanes.begin(), sel.gpu_lanes.end(),
                                                 static_cast<size_t>(lane)) != sel.gpu_lanes.end();
    const bool direct = !e.table(Op::Put, true, mem).ranges().empty() ||
                        !e.table(Op::Get, true, mem).ranges().empty();
    if (!direct || gpu_only)
      e.staging_[m] = plan_staging(local, mem, params.frag_size[m], params.staging_depth);
  }
  e.remote_staging_ = sel.am_lane >= 0;
  return e;
}

const Staging* EpProtocols::staging(Op op, uct::MemType mem) const {
  const auto m = static_cast<size_t>(mem);
  if (op == Op::Am || m == 0 || m >= kProtoMemTypes || !staging_[m]) return nullptr;
  return table(op, true).ranges().empty() ? nullptr : &*staging_[m];
}

RmaChoice EpProtocols::route(Op op, bool registered, uct::MemType mem, size_t length,
                             const Rkey& rkey) const {
  RmaChoice c;
  const bool peer_gpu = rkey.mem_type() != uct::MemType::Host;
  // The peer stages its memory; local GPU memory is staged here first.
  auto remote = [&]() {
    c.route = remote_staging_ ? RmaRoute::RemoteStaged : RmaRoute::NoAmLane;
    if (c.route == RmaRoute::RemoteStaged && mem != uct::MemType::Host) {
      c.staging = staging(op, mem);
      if (!c.staging) c.route = RmaRoute::None;
    }
    return c;
  };
  if (peer_gpu && !rkey.any_lane()) return remote();
  const ProtoTable& t = table(op, registered, mem);
  const ProtoRange* range = t.lookup(length);
  // A lane the peer's registration has no key for (cuda_ipc, the lane of
  // local GPU memory, towards the peer's host memory) cannot carry it.
  if (range && (range->lanes.empty() || rkey.for_lane(range->lanes[0]))) {
    c.route = RmaRoute::Table;
    c.range = range;
    c.index = static_cast<size_t>(range - t.ranges().data());
    return c;
  }
  if ((c.staging = staging(op, mem))) {
    c.route = RmaRoute::Staged;
    return c;
  }
  if (peer_gpu) return remote();
  return c;
}

void EpProtocols::print(std::ostream& os) const {
  for (bool registered : {false, true}) {
    os << (registered ? " with a registered buffer:\n" : " with an unregistered buffer:\n");
    for (Op op : {Op::Put, Op::Get, Op::Am}) {
      const ProtoTable& t = table(op, registered);
      if (t.ranges().empty()) os << "  " << op_name(op) << ": no protocol (no lane)\n";
      t.print(os);
    }
  }
  for (size_t m = 1; m < kProtoMemTypes; ++m) {
    const auto mem = static_cast<uct::MemType>(m);
    bool any = false;
    for (Op op : {Op::Put, Op::Get, Op::Am}) any = any || !table(op, true, mem).ranges().empty();
    if (staging_[m]) {
      const Staging& st = *staging_[m];
      os << " with a " << uct::mem_type_name(mem)
         << (any ? " buffer (its lane reaches the peer's GPU memory only; other memory is staged "
                   "through host bounce buffers):\n"
                 : " buffer (no lane can access it: staged through host bounce buffers):\n");
      for (Op op : {Op::Put, Op::Get}) {
        if (!staging(op, mem)) {
          os << "  " << op_name(op) << ": no protocol (no lane)\n";
          continue;
        }
        os << "  " << op_name(op) << " staged via " << st.name << " (frag "
           << size_text(st.frag_size) << ", " << st.depth
           << " in flight) + each fragment by the registered host " << op_name(op) << ":\n";
        const ProtoRange* r = table(op, true).lookup(st.frag_size);
        if (r) ProtoTable(op, {*r}).print(os);
      }
      os << "  am: unsupported (memory type: no lane can access it; active messages are not "
            "staged)\n";
      continue;
    }
    if (!any) {
      os << " " << uct::mem_type_name(mem)
         << " memory: unsupported (memory type: no lane can access it, and no memory-type "
            "transport such as cuda_copy can stage it)\n";
      continue;
    }
    os << " with a registered " << uct::mem_type_name(mem) << " buffer:\n";
    for (Op op : {Op::Put, Op::Get, Op::Am}) table(op, true, mem).print(os);
  }
  os << " a peer's memory no lane reaches (its GPU memory): put, get: "
     << (remote_staging_ ? "remote staging (the peer stages it through its bounce buffers; "
                           "request and completion over the am lane)\n"
                         : "unsupported (no am lane for remote staging)\n");
}

}  // namespace mc::ucp::proto
