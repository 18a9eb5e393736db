// SPDX-License-Identifier: Apache-2.0
// Slice planning cost of a multi-lane transfer: cutting it into 64 KiB
// slices and sharing them among 2 or 4 lanes by bandwidth.
#include <benchmark/benchmark.h>

#include <cstddef>
#include <vector>

#include "ucp/proto/slicing.h"

namespace {

using namespace mc::ucp::proto;

constexpr size_t kSlice = 65536;
constexpr size_t kFragmentRatio = 4;

void BM_SliceCut(benchmark::State& state) {
  const size_t total = static_cast<size_t>(state.range(0));
  for (auto _ : state) {
    std::vector<Slice> slices = cut_slices(total, kSlice, kFragmentRatio);
    benchmark::DoNotOptimize(slices.data());
  }
}
BENCHMARK(BM_SliceCut)->Arg(1 << 20)->Arg(64 << 20);

// Cut and assign, as one multi-zcopy transfer plans; range(1) lanes of
// unequal bandwidth.
void BM_SlicePlan(benchmark::State& state) {
  const size_t total = static_cast<size_t>(state.range(0));
  std::vector<double> bandwidths;
  for (int64_t i = 0; i < state.range(1); ++i) bandwidths.push_back(10e9 / double(i + 1));
  for (auto _ : state) {
    std::vector<Slice> slices = cut_slices(total, kSlice, kFragmentRatio);
    assign_lanes(&slices, bandwidths);
    benchmark::DoNotOptimize(slices.data());
  }
}
BENCHMARK(BM_SlicePlan)->Args({1 << 20, 2})->Args({64 << 20, 2})->Args({64 << 20, 4});

}  // namespace
