// SPDX-License-Identifier: Apache-2.0
// Endpoint-store caches: SIEVE lookups (hit, miss), SIEVE insert with
// eviction, FIFO insert with eviction, over small and large capacities.
#include <benchmark/benchmark.h>

#include <cstdint>

#include "ucs/datastruct/fifo_cache.h"
#include "ucs/datastruct/sieve_cache.h"

namespace {

using mc::ucs::FifoCache;
using mc::ucs::SieveCache;

// A value the size of a small endpoint handle.
struct Value {
  uint64_t words[4];
};

template <typename Cache>
void fill(Cache& cache, uint64_t n) {
  for (uint64_t k = 0; k < n; ++k) cache.insert(k, Value{{k, 0, 0, 0}});
}

void BM_SieveHit(benchmark::State& state) {
  const auto n = static_cast<uint64_t>(state.range(0));
  SieveCache<uint64_t, Value> cache(n);
  fill(cache, n);
  uint64_t k = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(cache.get(k));
    k = k + 1 == n ? 0 : k + 1;
  }
}
BENCHMARK(BM_SieveHit)->Arg(1024)->Arg(65536);

void BM_SieveMiss(benchmark::State& state) {
  const auto n = static_cast<uint64_t>(state.range(0));
  SieveCache<uint64_t, Value> cache(n);
  fill(cache, n);
  uint64_t k = n;
  for (auto _ : state) {
    benchmark::DoNotOptimize(cache.get(k));
    ++k;
  }
}
BENCHMARK(BM_SieveMiss)->Arg(1024)->Arg(65536);

// Every insert is a new key into a full cache, with every other resident
// entry visited, so the hand does real work.
void BM_SieveInsertEvict(benchmark::State& state) {
  const auto n = static_cast<uint64_t>(state.range(0));
  uint64_t evictions = 0;
  SieveCache<uint64_t, Value> cache(n, [&](const uint64_t&, Value&) { ++evictions; });
  fill(cache, n);
  uint64_t k = n;
  for (auto _ : state) {
    if (k % 2 == 0) benchmark::DoNotOptimize(cache.get(k - n / 2));
    benchmark::DoNotOptimize(cache.insert(k, Value{{k, 0, 0, 0}}));
    ++k;
  }
  state.counters["evictions"] = static_cast<double>(evictions);
}
BENCHMARK(BM_SieveInsertEvict)->Arg(1024)->Arg(65536);

void BM_FifoInsert(benchmark::State& state) {
  const auto n = static_cast<uint64_t>(state.range(0));
  uint64_t evictions = 0;
  FifoCache<uint64_t, Value> cache(n, [&](const uint64_t&, Value&) { ++evictions; });
  fill(cache, n);
  uint64_t k = n;
  for (auto _ : state) {
    benchmark::DoNotOptimize(cache.insert(k, Value{{k, 0, 0, 0}}));
    ++k;
  }
  state.counters["evictions"] = static_cast<double>(evictions);
}
BENCHMARK(BM_FifoInsert)->Arg(1024)->Arg(65536);

void BM_FifoHit(benchmark::State& state) {
  const auto n = static_cast<uint64_t>(state.range(0));
  FifoCache<uint64_t, Value> cache(n);
  fill(cache, n);
  uint64_t k = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(cache.get(k));
    k = k + 1 == n ? 0 : k + 1;
  }
}
BENCHMARK(BM_FifoHit)->Arg(1024)->Arg(65536);

}  // namespace
