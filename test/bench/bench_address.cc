// SPDX-License-Identifier: Apache-2.0
// Worker address cost: address_pack and address_unpack of an address with
// 1 and 8 ifaces (what wireup does once per endpoint).
#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>
#include <vector>

#include "ucp/wireup/address.h"

namespace {

using namespace mc::ucp::wireup;

WorkerAddress make_address(size_t ifaces) {
  WorkerAddress a;
  a.uuid = 0x0123456789abcdefull;
  a.hostname = "bench-host";
  for (size_t i = 0; i < ifaces; ++i) {
    AddressEntry e;
    e.component = "tcp";
    e.md_name = "tcp";
    e.tl_name = "tcp";
    e.dev_name = "eth" + std::to_string(i);
    e.device_addr.assign(16, static_cast<uint8_t>(i));
    e.iface_addr.assign(8, static_cast<uint8_t>(i + 1));
    e.summary.cap = 0xff;
    e.summary.latency = 5e-6;
    e.summary.bandwidth = 10e9;
    e.summary.overhead = 1e-7;
    a.ifaces.push_back(std::move(e));
  }
  return a;
}

void BM_AddressPack(benchmark::State& state) {
  const WorkerAddress a = make_address(static_cast<size_t>(state.range(0)));
  for (auto _ : state) {
    std::vector<uint8_t> packed = address_pack(a);
    benchmark::DoNotOptimize(packed.data());
  }
}
BENCHMARK(BM_AddressPack)->Arg(1)->Arg(8);

void BM_AddressUnpack(benchmark::State& state) {
  const std::vector<uint8_t> packed =
      address_pack(make_address(static_cast<size_t>(state.range(0))));
  for (auto _ : state) {
    mc::ucs::Result<WorkerAddress> a = address_unpack(packed);
    if (!a.ok()) {
      state.SkipWithError("address_unpack failed");
      return;
    }
    benchmark::DoNotOptimize(a);
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(packed.size()));
}
BENCHMARK(BM_AddressUnpack)->Arg(1)->Arg(8);

}  // namespace
