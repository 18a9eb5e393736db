// SPDX-License-Identifier: Apache-2.0
// Protocol selection cost: ProtoTable::lookup on the data path (a table of
// short / bcopy / zcopy / multi-zcopy ranges), and building the table.
#include <benchmark/benchmark.h>

#include <cstddef>
#include <vector>

#include "ucp/proto/proto_select.h"

namespace {

using namespace mc::ucp::proto;

LanePerf lane(size_t index, double bandwidth) {
  LanePerf l;
  l.lane = index;
  l.has_short = l.has_bcopy = l.has_zcopy = true;
  l.max_short = 128;
  l.max_bcopy = 8192;
  l.max_zcopy = size_t{1} << 30;
  l.latency = 5e-6;
  l.overhead = 1e-7;
  l.bandwidth = bandwidth;
  return l;
}

// Two rails offered: multi-zcopy where the model prefers it.
ProtoSelectParams put_params() {
  ProtoSelectParams p;
  p.op = Op::Put;
  p.single = lane(0, 10e9);
  p.rails = {lane(0, 10e9), lane(1, 5e9)};
  return p;
}

void BM_ProtoLookup(benchmark::State& state) {
  const ProtoTable table = select_protocols(put_params());
  // Sizes spread over every range, walked in order.
  std::vector<size_t> sizes;
  for (size_t s = 1; s <= (size_t{1} << 24); s *= 2) sizes.push_back(s + s / 3);
  size_t i = 0;
  for (auto _ : state) {
    const ProtoRange* r = table.lookup(sizes[i]);
    benchmark::DoNotOptimize(r);
    if (++i == sizes.size()) i = 0;
  }
  state.counters["ranges"] = static_cast<double>(table.ranges().size());
}
BENCHMARK(BM_ProtoLookup);

void BM_ProtoSelect(benchmark::State& state) {
  const ProtoSelectParams p = put_params();
  for (auto _ : state) {
    ProtoTable table = select_protocols(p);
    benchmark::DoNotOptimize(table);
  }
}
BENCHMARK(BM_ProtoSelect);

}  // namespace
