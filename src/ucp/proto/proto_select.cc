// SPDX-License-Identifier: Apache-2.0
// Protocol selection by the linear performance model.
//
// Costs in seconds for n bytes, on the single lane L (or the rails R):
//   short: L.overhead + L.latency + n / L.bw                     n <= L.max_short
//   bcopy: L.overhead + L.latency + n * (1/L.bw + 1/copy_bw + L.overhead/L.max_bcopy)
//   zcopy: L.overhead + L.latency + reg.c + n * (1/L.bw + reg.m + L.overhead/L.max_zcopy)  n >= 1
//   multi: max(R.overhead + R.latency) + sum(R.reg.c)
//          + n * (1/sum(R.bw) + sum(R.reg.m) + max(R.overhead)/(slice * |R|))  n > slice
//   rndv:  3 * (L.overhead + L.latency) + G.latency + 2 * reg.c
//          + n * (1/G.bw + 2 * reg.m)                              n >= 1, am only
// where reg is zero when the user's buffer is registered. The per-byte
// overhead terms charge one posted operation per fragment or slice. For am,
// eager protocols also pay the receiver's copy (1/copy_bw per byte: out of
// the fragments into one message); rendezvous gets straight into place, but
// pays a request-to-send, the get (G: the get figures) and an acknowledgement,
// and registers on both sides.
#include "ucp/proto/proto_select.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace mc::ucp::proto {

const char* op_name(Op op) {
  switch (op) {
    case Op::Put: return "put";
    case Op::Get: return "get";
    case Op::Am: return "am";
  }
  return "?";
}

const char* proto_kind_name(ProtoKind kind) {
  switch (kind) {
    case ProtoKind::Short: return "short";
    case ProtoKind::Bcopy: return "bcopy";
    case ProtoKind::Zcopy: return "zcopy";
    case ProtoKind::MultiZcopy: return "multi-zcopy";
    case ProtoKind::Rndv: return "rndv";
  }
  return "?";
}

namespace {

struct Model {
  ProtoKind kind;
  double c, m;
  size_t min, max;
  std::vector<size_t> lanes;
  double at(size_t n) const { return c + m * static_cast<double>(n); }
  bool valid(size_t n) const { return n >= min && n <= max; }
};

double per_byte(const LanePerf& l) {
  return 1.0 / l.bandwidth;
}

std::vector<Model> build_models(const ProtoSelectParams& p) {
  std::vector<Model> models;
  const LanePerf& l = p.single;
  const double base = l.overhead + l.latency;
  const double reg_c = p.registered ? 0 : l.reg_cost.c;
  const double reg_m = p.registered ? 0 : l.reg_cost.m;
  if (l.has_short) {
    models.push_back({ProtoKind::Short, base, per_byte(l), 0, l.max_short, {l.lane}});
  }
  if (l.has_bcopy && l.max_bcopy > 0) {
    const double m =
        per_byte(l) + 1.0 / p.copy_bandwidth + l.overhead / static_cast<double>(l.max_bcopy);
    models.push_back({ProtoKind::Bcopy, base, m, 0, SIZE_MAX, {l.lane}});
  }
  if (l.has_zcopy && l.max_zcopy > 0) {
    const double m = per_byte(l) + reg_m + l.overhead / static_cast<double>(l.max_zcopy);
    models.push_back({ProtoKind::Zcopy, base + reg_c, m, 1, SIZE_MAX, {l.lane}});
  }
  if (p.rails.size() >= 2) {
    double c = 0, bw = 0, rm = 0, rc = 0, ovh = 0;
    std::vector<size_t> lanes;
    for (const LanePerf& r : p.rails) {
      c = std::max(c, r.overhead + r.latency);
      bw += r.bandwidth;
      rc += p.registered ? 0 : r.reg_cost.c;
      rm += p.registered ? 0 : r.reg_cost.m;
      ovh = std::max(ovh, r.overhead);
      lanes.push_back(r.lane);
    }
    const double m = 1.0 / bw + rm +
                     ovh / (static_cast<double>(p.slice_size) * static_cast<double>(lanes.size()));
    models.push_back({ProtoKind::MultiZcopy, c + rc, m, p.slice_size + 1, SIZE_MAX, lanes});
  }
  if (p.op == Op::Am && p.rndv_get && p.rndv_get->has_zcopy) {
    const LanePerf& g = *p.rndv_get;
    // Eager messages are copied once more at the receiver.
    for (Model& e : models) {
      if (e.kind != ProtoKind::Short) e.m += 1.0 / p.copy_bandwidth;
    }
    const double c = 3 * base + g.latency + 2 * reg_c;
    models.push_back({ProtoKind::Rndv, c, per_byte(g) + 2 * reg_m, 1, SIZE_MAX, {l.lane}});
  }
  return models;
}

bool forced_allows(const ProtoSelectParams& p, ProtoKind kind, size_t n) {
  if (p.rndv_thresh && p.rndv_get && p.rndv_get->has_zcopy) {
    if (kind == ProtoKind::Rndv) return n >= *p.rndv_thresh;
    if (n >= *p.rndv_thresh) return false;
  }
  const bool zero_copy =
      kind == ProtoKind::Zcopy || kind == ProtoKind::MultiZcopy || kind == ProtoKind::Rndv;
  if (p.bcopy_thresh && kind == ProtoKind::Short && n >= *p.bcopy_thresh) return false;
  if (p.zcopy_thresh && zero_copy && n < *p.zcopy_thresh) return false;
  if (p.zcopy_thresh && !zero_copy && n >= *p.zcopy_thresh) return false;
  return true;
}

// The cheapest model at n among those the forced thresholds allow, or among
// all valid ones when the thresholds leave none. -1: nothing moves n bytes.
int best_at(const std::vector<Model>& models, const ProtoSelectParams& p, size_t n, bool* forced) {
  int best = -1, best_free = -1;
  for (size_t i = 0; i < models.size(); ++i) {
    if (!models[i].valid(n)) continue;
    if (best_free < 0 || models[i].at(n) < models[best_free].at(n)) best_free = static_cast<int>(i);
    if (!forced_allows(p, models[i].kind, n)) continue;
    if (best < 0 || models[i].at(n) < models[best].at(n)) best = static_cast<int>(i);
  }
  if (best < 0) best = best_free;
  *forced = best >= 0 && best != best_free;
  return best;
}

void add_point(std::vector<size_t>* pts, double x) {
  if (!(x > 0) || x >= 9.0e18) return;
  pts->push_back(static_cast<size_t>(std::floor(x)) + 1);
  pts->push_back(static_cast<size_t>(std::ceil(x)));
}

// Sizes where the answer may change: validity limits, forced thresholds and
// every crossing of two cost lines (both integers around it).
std::vector<size_t> breakpoints(const std::vector<Model>& models, const ProtoSelectParams& p) {
  std::vector<size_t> pts = {0};
  for (const Model& m : models) {
    pts.push_back(m.min);
    if (m.max != SIZE_MAX) pts.push_back(m.max + 1);
  }
  if (p.bcopy_thresh) pts.push_back(*p.bcopy_thresh);
  if (p.zcopy_thresh) pts.push_back(*p.zcopy_thresh);
  if (p.rndv_thresh) pts.push_back(*p.rndv_thresh);
  for (size_t i = 0; i < models.size(); ++i) {
    for (size_t j = i + 1; j < models.size(); ++j) {
      if (models[i].m != models[j].m) {
        add_point(&pts, (models[j].c - models[i].c) / (models[i].m - models[j].m));
      }
    }
  }
  std::sort(pts.begin(), pts.end());
  pts.erase(std::unique(pts.begin(), pts.end()), pts.end());
  return pts;
}

}  // namespace

ProtoTable select_protocols(const ProtoSelectParams& p) {
  const std::vector<Model> models = build_models(p);
  const std::vector<size_t> pts = breakpoints(models, p);
  std::vector<ProtoRange> ranges;
  for (size_t k = 0; k < pts.size(); ++k) {
    const size_t lo = pts[k];
    const size_t hi = k + 1 < pts.size() ? pts[k + 1] - 1 : SIZE_MAX;
    bool forced = false;
    const int best = best_at(models, p, lo, &forced);
    if (best < 0) continue;
    const Model& m = models[static_cast<size_t>(best)];
    if (!ranges.empty() && ranges.back().kind == m.kind && ranges.back().max + 1 == lo &&
        ranges.back().forced == forced) {
      ranges.back().max = hi;
      continue;
    }
    ranges.push_back(ProtoRange{lo, hi, m.kind, m.lanes, m.c, m.m, forced});
  }
  return ProtoTable(p.op, std::move(ranges));
}

const ProtoRange* ProtoTable::search(size_t size) const {
  auto it = std::lower_bound(ranges_.begin(), ranges_.end(), size,
                             [](const ProtoRange& r, size_t s) { return r.max < s; });
  if (it == ranges_.end() || it->min > size) return nullptr;
  return &*it;
}

void ProtoTable::print(std::ostream& os) const {
  for (const ProtoRange& r : ranges_) {
    std::ostringstream line;
    line << "  " << op_name(op_) << " " << r.min << ".."
         << (r.max == SIZE_MAX ? std::string("inf") : std::to_string(r.max)) << " "
         << proto_kind_name(r.kind) << " lane";
    if (r.lanes.size() > 1) line << "s";
    for (size_t i = 0; i < r.lanes.size(); ++i) line << (i ? "," : " ") << r.lanes[i];
    line.precision(3);
    line << std::fixed << " (" << r.cost_c * 1e6 << "us + " << r.cost_m * 1e9 << "ns/B)"
         << (r.forced ? " forced" : "") << "\n";
    os << line.str();
  }
}

}  // namespace mc::ucp::proto
