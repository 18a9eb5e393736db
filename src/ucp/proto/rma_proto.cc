// SPDX-License-Identifier: Apache-2.0
// The put and get protocols' call, limits and immediate entries.
#include "ucp/proto/rma_proto.h"

#include <algorithm>

namespace mc::ucp::proto {

size_t slice_limit(Op op, ProtoKind kind, const uct::IfaceAttr& attr) {
  const detail::Caps c = detail::caps_of(op, attr);
  if (kind == ProtoKind::Bcopy)
    return c.bcopy ? c.lim->max_bcopy : (c.zcopy ? c.lim->max_zcopy : 0);
  return c.zcopy ? c.lim->max_zcopy : (c.bcopy ? c.lim->max_bcopy : 0);
}

namespace {

// The smallest slice_limit() among `lanes` that have one; SIZE_MAX: none
// (or a short kind, never cut).
size_t smallest_limit(Op op, ProtoKind kind, const std::vector<LaneRuntime>& runtime,
                      const std::vector<size_t>& lanes) {
  if (kind == ProtoKind::Short) return SIZE_MAX;
  size_t frag = SIZE_MAX;
  for (size_t lane : lanes) {
    const size_t limit = slice_limit(op, kind, runtime[lane].attr);
    if (limit > 0) frag = std::min(frag, limit);
  }
  return frag;
}

}  // namespace

size_t rma_fragment(Op op, ProtoKind kind, const std::vector<LaneRuntime>& runtime,
                    const std::vector<size_t>& lanes, size_t length) {
  const size_t frag = smallest_limit(op, kind, runtime, lanes);
  return frag == SIZE_MAX ? std::max<size_t>(length, 1) : frag;
}

std::vector<RmaEntry> rma_entries(const ProtoTable& table, const std::vector<LaneRuntime>& runtime,
                                  const std::vector<size_t>& rails) {
  std::vector<RmaEntry> out;
  for (const ProtoRange& r : table.ranges()) {
    RmaEntry e;
    if (r.kind != ProtoKind::MultiZcopy && r.kind != ProtoKind::Rndv && !r.lanes.empty()) {
      std::vector<size_t> lanes = r.lanes;
      lanes.insert(lanes.end(), rails.begin(), rails.end());
      e.lane = r.lanes[0];
      e.max = smallest_limit(table.op(), r.kind, runtime, lanes);
    }
    out.push_back(e);
  }
  return out;
}

}  // namespace mc::ucp::proto
