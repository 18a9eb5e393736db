// SPDX-License-Identifier: Apache-2.0
// Mpool cost: one get/put pair, a burst of gets then puts, the locked
// variant on 1 and 2 threads, and malloc/free for scale.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <memory>
#include <utility>
#include <vector>

#include "ucs/mpool/mpool.h"

namespace {

using namespace mc::ucs;

MpoolParams bench_params(size_t elem_size) {
  MpoolParams p;
  p.elem_size = elem_size;
  p.elems_per_chunk = 1024;
  p.name = "bench";
  return p;
}

void BM_MpoolGetPut(benchmark::State& state) {
  auto pool = Mpool::create(bench_params(static_cast<size_t>(state.range(0))));
  if (!pool.ok()) {
    state.SkipWithError("Mpool::create failed");
    return;
  }
  Mpool& mp = **pool;
  for (auto _ : state) {
    void* e = mp.get();
    benchmark::DoNotOptimize(e);
    mp.put(e);
  }
}
BENCHMARK(BM_MpoolGetPut)->Arg(64)->Arg(8192);

// Takes `range(0)` elements, then returns them: walks the free list and, on
// the first iteration, grows the pool.
void BM_MpoolBurst(benchmark::State& state) {
  auto pool = Mpool::create(bench_params(64));
  if (!pool.ok()) {
    state.SkipWithError("Mpool::create failed");
    return;
  }
  Mpool& mp = **pool;
  std::vector<void*> held(static_cast<size_t>(state.range(0)));
  for (auto _ : state) {
    for (void*& e : held) e = mp.get();
    benchmark::DoNotOptimize(held.data());
    for (void* e : held) mp.put(e);
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_MpoolBurst)->Arg(16)->Arg(4096);

// One pool shared by every benchmark thread, created once; null on failure.
ThreadSafeMpool* shared_pool() {
  static std::unique_ptr<ThreadSafeMpool> pool = [] {
    auto r = ThreadSafeMpool::create(bench_params(64));
    return r.ok() ? std::move(r).value() : nullptr;
  }();
  return pool.get();
}

// With two threads, both contend for the one lock on every call.
void BM_ThreadSafeMpoolGetPut(benchmark::State& state) {
  ThreadSafeMpool* mp = shared_pool();
  if (mp == nullptr) {
    state.SkipWithError("ThreadSafeMpool::create failed");
    return;
  }
  for (auto _ : state) {
    void* e = mp->get();
    benchmark::DoNotOptimize(e);
    mp->put(e);
  }
}
BENCHMARK(BM_ThreadSafeMpoolGetPut)->Threads(1)->Threads(2);

void BM_MallocFree(benchmark::State& state) {
  const auto size = static_cast<size_t>(state.range(0));
  for (auto _ : state) {
    void* e = std::malloc(size);
    benchmark::DoNotOptimize(e);
    std::free(e);
  }
}
BENCHMARK(BM_MallocFree)->Arg(64)->Arg(8192);

}  // namespace
