// SPDX-License-Identifier: Apache-2.0
// Lane selection over local resources and a peer's address entries.
#include "ucp/wireup/lane_select.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <sstream>

namespace mc::ucp::wireup {

namespace {

// A bandwidth rail slower than this fraction of the best one would hold the
// whole transfer back more than it adds: it is not used.
constexpr double kMinRailBandwidthRatio = 1.0 / 16;
constexpr double kInf = std::numeric_limits<double>::infinity();

std::string us(double seconds) {
  std::ostringstream os;
  os.precision(3);
  os << std::fixed << seconds * 1e6 << "us";
  return os.str();
}

std::string mbs(double bytes_per_s) {
  std::ostringstream os;
  os.precision(1);
  os << std::fixed << bytes_per_s / 1e6 << "MB/s";
  return os.str();
}

Candidate score(const LocalResource& l, const AddressEntry& r, size_t li, size_t ri,
                const LaneSelectParams& p) {
  Candidate c;
  c.local = li;
  c.remote = ri;
  c.name = l.name() + " -> " + r.tl_name + "/" + r.dev_name;
  c.latency = std::max(l.attr.latency.c, r.summary.latency);
  const double remote_bw = r.summary.bandwidth > 0 ? r.summary.bandwidth : kInf;
  c.bandwidth = std::min(l.attr.bandwidth.total(), remote_bw);
  c.overhead = l.attr.overhead;
  c.am_time = c.latency + l.attr.overhead + r.summary.overhead;
  c.rma_time = c.latency + l.attr.overhead +
               (c.bandwidth > 0 ? static_cast<double>(p.rma_size) / c.bandwidth : kInf);
  c.priority = l.attr.priority;
  const uint64_t cap = l.attr.cap & r.summary.cap;
  const bool connect = (l.attr.cap & uct::kCapConnectToIface) != 0;
  const bool put = cap & (uct::kCapPutShort | uct::kCapPutBcopy | uct::kCapPutZcopy);
  const bool get = cap & (uct::kCapGetShort | uct::kCapGetBcopy | uct::kCapGetZcopy);
  c.am_ok = connect && (cap & (uct::kCapAmShort | uct::kCapAmBcopy));
  c.rma_ok = connect && put && get;
  c.bw_ok = connect && (cap & uct::kCapPutZcopy) && (cap & uct::kCapGetZcopy);
  return c;
}

// Orders candidates by a key (lower first), then priority, then local index.
template <typename Key>
void sort_by(std::vector<size_t>* idx, const std::vector<Candidate>& cands, Key key) {
  std::stable_sort(idx->begin(), idx->end(), [&](size_t a, size_t b) {
    const double ka = key(cands[a]), kb = key(cands[b]);
    if (ka != kb) return ka < kb;
    if (cands[a].priority != cands[b].priority) return cands[a].priority > cands[b].priority;
    return cands[a].local < cands[b].local;
  });
}

void collect(const std::vector<LocalResource>& local, const std::vector<AddressEntry>& remote,
             const ReachFn& reachable, const LaneSelectParams& p, LaneSelection* sel) {
  for (size_t li = 0; li < local.size(); ++li) {
    const LocalResource& l = local[li];
    if (!l.enabled) {
      sel->rejections.push_back({l.name(), "", RejectReason::Filtered, l.disabled_reason});
      continue;
    }
    bool peer_has_tl = false;
    for (size_t ri = 0; ri < remote.size(); ++ri) {
      if (remote[ri].tl_name != l.tl_name) continue;
      peer_has_tl = true;
      std::string why;
      const std::string pair = l.name() + " -> " + remote[ri].tl_name + "/" + remote[ri].dev_name;
      if (!reachable(li, ri, &why)) {
        sel->rejections.push_back({pair, "", RejectReason::Unreachable, why});
        continue;
      }
      sel->candidates.push_back(score(l, remote[ri], li, ri, p));
    }
    if (!peer_has_tl) {
      sel->rejections.push_back(
          {l.name(), "", RejectReason::NoPeerTransport, "the peer has no " + l.tl_name + " iface"});
    }
  }
  for (const AddressEntry& r : remote) {
    const bool known = std::any_of(local.begin(), local.end(),
                                   [&](const LocalResource& l) { return l.tl_name == r.tl_name; });
    if (!known) {
      sel->rejections.push_back({"peer " + r.tl_name + "/" + r.dev_name, "",
                                 RejectReason::NoLocalTransport,
                                 "no local " + r.tl_name + " iface"});
    }
  }
}

size_t add_lane(LaneSelection* sel, size_t cand, unsigned role) {
  for (size_t i = 0; i < sel->lanes.size(); ++i) {
    if (sel->lanes[i].candidate == cand) {
      sel->lanes[i].roles |= role;
      return i;
    }
  }
  const Candidate& c = sel->candidates[cand];
  sel->lanes.push_back(Lane{cand, c.local, c.remote, role});
  return sel->lanes.size() - 1;
}

// The best candidate for a role by `key`, the others rejected with the scores.
template <typename Ok, typename Key>
int pick_best(LaneSelection* sel, const char* role, Ok ok, Key key, const char* what) {
  std::vector<size_t> idx;
  for (size_t i = 0; i < sel->candidates.size(); ++i) {
    std::string why;
    if (ok(sel->candidates[i], &why)) {
      idx.push_back(i);
    } else {
      sel->rejections.push_back({sel->candidates[i].name, role, RejectReason::Capability, why});
    }
  }
  if (idx.empty()) return -1;
  sort_by(&idx, sel->candidates, key);
  const Candidate& best = sel->candidates[idx[0]];
  for (size_t k = 1; k < idx.size(); ++k) {
    const Candidate& c = sel->candidates[idx[k]];
    sel->rejections.push_back(
        {c.name, role, RejectReason::LowerScore,
         std::string(what) + " " + us(key(c)) + " vs " + us(key(best)) + " of " + best.name});
  }
  return static_cast<int>(idx[0]);
}

}  // namespace

const char* reject_reason_name(RejectReason reason) {
  switch (reason) {
    case RejectReason::Filtered: return "filtered";
    case RejectReason::NoPeerTransport: return "no peer transport";
    case RejectReason::NoLocalTransport: return "no local transport";
    case RejectReason::Unreachable: return "unreachable";
    case RejectReason::Capability: return "capability";
    case RejectReason::MemType: return "memory type";
    case RejectReason::LowerScore: return "lower score";
    case RejectReason::SameDevice: return "same device";
    case RejectReason::RailLimit: return "rail limit";
    case RejectReason::LowBandwidth: return "low bandwidth";
    case RejectReason::SharedMemory: return "shared memory";
    case RejectReason::Loopback: return "loopback";
  }
  return "?";
}

std::string lane_roles_string(unsigned roles) {
  static const std::pair<unsigned, const char*> names[] = {
      {kLaneAm, "am"},       {kLaneRma, "rma"},        {kLaneRmaBw, "rma-bw"},
      {kLaneAmBw, "am-bw"}, {kLaneRmaGpu, "rma-gpu"}};
  std::string s;
  for (const auto& [bit, name] : names) {
    if (roles & bit) s += (s.empty() ? "" : "|") + std::string(name);
  }
  return s;
}

namespace {

bool mem_ok(const LocalResource& l, const LaneSelectParams& p) {
  return (l.attr.access_mem_types & uct::mem_type_bit(p.mem_type)) != 0;
}

// Whether the candidate's device is on the memory's NUMA node (true when
// either is unknown: no preference then).
bool near_memory(const Candidate& c, const std::vector<LocalResource>& local, int mem_node) {
  const int node = local[c.local].numa_node;
  return mem_node < 0 || node < 0 || node == mem_node;
}

// Bandwidth rails: devices near the memory first, then fastest first,
// distinct local devices, at most `max`. With `shm_alone`, a shared-memory
// best rail takes no network rail beside it: on one host every transport
// copies with the same CPUs and memory, so tcp over lo adds no bandwidth and
// its share of a transfer finishes last.
std::vector<size_t> pick_rails(LaneSelection* sel, const std::vector<LocalResource>& local,
                               std::vector<size_t> idx, size_t max, const char* role,
                               const LaneSelectParams& p, bool shm_alone = false,
                               size_t loopback_before = 0) {
  const int mem_node = p.mem_numa_node;
  std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) {
    const Candidate &ca = sel->candidates[a], &cb = sel->candidates[b];
    const bool na = near_memory(ca, local, mem_node), nb = near_memory(cb, local, mem_node);
    if (na != nb) return na;
    if (ca.bandwidth != cb.bandwidth) return ca.bandwidth > cb.bandwidth;
    if (ca.rma_time != cb.rma_time) return ca.rma_time < cb.rma_time;
    return ca.local < cb.local;
  });
  std::vector<size_t> chosen;
  std::set<std::string> local_devs, remote_devs;
  std::vector<bool> taken(idx.size(), false);
  auto beside_shm = [&](const Candidate& c) {
    return shm_alone && !chosen.empty() &&
           local[sel->candidates[chosen[0]].local].dev_type == uct::DeviceType::Shm &&
           local[c.local].dev_type != uct::DeviceType::Shm;
  };
  // A peer in this network namespace is reached through the kernel's
  // loopback whatever the device: more such rails than loopback_rails add
  // copies, not bandwidth (the transport stripes its own connections).
  size_t loopback_taken = loopback_before;
  auto loopback = [&](const Candidate& c) {
    return local[c.local].attr.kernel_loopback && loopback_taken >= p.loopback_rails;
  };
  for (int pass = 0; pass < 2; ++pass) {  // first distinct on both sides, then locally
    for (size_t k = 0; k < idx.size() && chosen.size() < max; ++k) {
      const Candidate& c = sel->candidates[idx[k]];
      const std::string& ldev = local[c.local].dev_name;
      const std::string rdev = std::to_string(c.remote);
      if (taken[k] || local_devs.count(ldev) || (pass == 0 && remote_devs.count(rdev))) continue;
      if (!chosen.empty() &&
          c.bandwidth < sel->candidates[chosen[0]].bandwidth * kMinRailBandwidthRatio) {
        continue;
      }
      if (beside_shm(c) || loopback(c)) continue;
      taken[k] = true;
      loopback_taken += local[c.local].attr.kernel_loopback ? 1 : 0;
      chosen.push_back(idx[k]);
      local_devs.insert(ldev);
      remote_devs.insert(rdev);
    }
  }
  for (size_t k = 0; k < idx.size(); ++k) {
    if (taken[k]) continue;
    const Candidate& c = sel->candidates[idx[k]];
    if (loopback(c)) {
      sel->rejections.push_back(
          {c.name, role, RejectReason::Loopback,
           "the peer shares this network namespace, so every device goes through the kernel's "
           "loopback, and MC_LOOPBACK_RAILS=" +
               std::to_string(p.loopback_rails) + " such rail(s) are chosen"});
      continue;
    }
    const double best = sel->candidates[chosen[0]].bandwidth;
    if (c.bandwidth < best * kMinRailBandwidthRatio) {
      sel->rejections.push_back({c.name, role, RejectReason::LowBandwidth,
                                 mbs(c.bandwidth) + " is below 1/16 of " + mbs(best)});
    } else if (beside_shm(c)) {
      sel->rejections.push_back({c.name, role, RejectReason::SharedMemory,
                                 sel->candidates[chosen[0]].name +
                                     " carries it: on one host a network rail adds no bandwidth"});
    } else if (local_devs.count(local[c.local].dev_name) && chosen.size() < max) {
      sel->rejections.push_back({c.name, role, RejectReason::SameDevice,
                                 "device " + local[c.local].dev_name + " already carries a rail"});
    } else {
      std::string why = "already " + std::to_string(max) + " rail(s)";
      if (!near_memory(c, local, mem_node)) {
        why += "; its device is on NUMA node " + std::to_string(local[c.local].numa_node) +
               ", the memory on node " + std::to_string(mem_node);
      }
      sel->rejections.push_back({c.name, role, RejectReason::RailLimit, why});
    }
  }
  return chosen;
}

void select_rma(LaneSelection* sel, const std::vector<LocalResource>& local,
                const LaneSelectParams& p) {
  auto rma_ok = [&](const Candidate& c, std::string* why) {
    if (!c.rma_ok) return *why = "cannot put and get", false;
    if (!mem_ok(local[c.local], p)) {
      return *why = std::string("cannot access ") + uct::mem_type_name(p.mem_type) + " memory",
             false;
    }
    return true;
  };
  const int rma = pick_best(
      sel, "rma", rma_ok, [](const Candidate& c) { return c.rma_time; }, "rma time");
  if (rma >= 0) sel->rma_lanes.push_back(add_lane(sel, static_cast<size_t>(rma), kLaneRma));
  std::vector<size_t> bw;
  for (size_t i = 0; i < sel->candidates.size(); ++i) {
    const Candidate& c = sel->candidates[i];
    if (c.bw_ok && mem_ok(local[c.local], p)) {
      bw.push_back(i);
    } else {
      sel->rejections.push_back(
          {c.name, "rma-bw", c.bw_ok ? RejectReason::MemType : RejectReason::Capability,
           c.bw_ok ? std::string("cannot access ") + uct::mem_type_name(p.mem_type) + " memory"
                   : "cannot put and get by zero-copy"});
    }
  }
  if (bw.empty()) return;
  for (size_t cand : pick_rails(sel, local, bw, p.max_rma_rails, "rma-bw", p,
                                /*shm_alone=*/true)) {
    sel->rma_bw_lanes.push_back(add_lane(sel, cand, kLaneRmaBw));
  }
}

void select_am_rails(LaneSelection* sel, const std::vector<LocalResource>& local,
                     const LaneSelectParams& p, size_t am_cand) {
  sel->am_bw_lanes.push_back(add_lane(sel, am_cand, kLaneAmBw));
  if (p.max_eager_rails <= 1) return;
  std::vector<size_t> others;
  for (size_t i = 0; i < sel->candidates.size(); ++i) {
    const Candidate& c = sel->candidates[i];
    if (i != am_cand && c.am_ok &&
        local[c.local].dev_name != local[sel->candidates[am_cand].local].dev_name) {
      others.push_back(i);
    }
  }
  if (others.empty()) return;
  // The am lane is the first rail.
  const size_t loopback = local[sel->candidates[am_cand].local].attr.kernel_loopback ? 1 : 0;
  for (size_t cand : pick_rails(sel, local, others, p.max_eager_rails - 1, "am-bw", p,
                                /*shm_alone=*/false, loopback)) {
    sel->am_bw_lanes.push_back(add_lane(sel, cand, kLaneAmBw));
  }
}

// GPU memory that no RMA lane touches: the pair that can, fastest first
// (cuda_ipc between two processes of one host), rather than staging it.
void select_gpu(LaneSelection* sel, const std::vector<LocalResource>& local) {
  const uct::MemTypeMask gpu = uct::mem_type_bit(uct::MemType::Cuda);
  for (const std::vector<size_t>* v : {&sel->rma_lanes, &sel->rma_bw_lanes}) {
    for (size_t lane : *v) {
      if (local[sel->candidate_of(lane).local].attr.access_mem_types & gpu) return;
    }
  }
  int best = -1;
  for (size_t i = 0; i < sel->candidates.size(); ++i) {
    const Candidate& c = sel->candidates[i];
    if (!c.bw_ok || !(local[c.local].attr.access_mem_types & gpu)) continue;
    if (best < 0 || c.bandwidth > sel->candidates[best].bandwidth ||
        (c.bandwidth == sel->candidates[best].bandwidth && c.priority > sel->candidates[best].priority)) {
      best = static_cast<int>(i);
    }
  }
  if (best >= 0) sel->gpu_lanes.push_back(add_lane(sel, static_cast<size_t>(best), kLaneRmaGpu));
}

}  // namespace

LaneSelection select_lanes(const std::vector<LocalResource>& local,
                           const std::vector<AddressEntry>& remote, const ReachFn& reachable,
                           const LaneSelectParams& params) {
  LaneSelection sel;
  collect(local, remote, reachable, params, &sel);
  auto am_ok = [](const Candidate& c, std::string* why) {
    if (!c.am_ok) return *why = "cannot send active messages", false;
    return true;
  };
  const int am = pick_best(
      &sel, "am", am_ok, [](const Candidate& c) { return c.am_time; }, "am time");
  if (am >= 0) {
    sel.am_lane = static_cast<int>(add_lane(&sel, static_cast<size_t>(am), kLaneAm));
    select_am_rails(&sel, local, params, static_cast<size_t>(am));
  }
  select_rma(&sel, local, params);
  if (params.mem_type == uct::MemType::Host) select_gpu(&sel, local);
  return sel;
}

void LaneSelection::print(std::ostream& os) const {
  if (lanes.empty()) os << "  no lane: the peer is unreachable\n";
  for (size_t i = 0; i < lanes.size(); ++i) {
    const Candidate& c = candidate_of(i);
    os << "  lane " << i << ": " << c.name << " [" << lane_roles_string(lanes[i].roles) << "] am "
       << us(c.am_time) << " (latency " << us(c.latency) << " + overheads), rma " << us(c.rma_time)
       << ", bandwidth " << mbs(c.bandwidth) << "\n";
  }
  for (const Rejection& r : rejections) {
    os << "  rejected " << r.name << (r.role.empty() ? "" : " for " + r.role) << ": "
       << reject_reason_name(r.reason) << (r.detail.empty() ? "" : ": " + r.detail) << "\n";
  }
}

}  // namespace mc::ucp::wireup
