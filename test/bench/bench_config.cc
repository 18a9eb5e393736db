// SPDX-License-Identifier: Apache-2.0
// Config parsing cost: single values, and a whole table from a snapshot.
#include <benchmark/benchmark.h>

#include "ucs/config/registry.h"
#include "ucs/log/log.h"
#include "ucs/module/module_loader.h"

namespace {

using namespace mc::ucs;

void BM_ParseSize(benchmark::State& state) {
  const auto parser = config::size_parser();
  size_t value = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(parser.parse("512k", &value));
  }
}
BENCHMARK(BM_ParseSize);

void BM_ParseKeyValue(benchmark::State& state) {
  const auto parser = config::key_value_parser(config::size_parser());
  std::map<std::string, size_t> value;
  for (auto _ : state) {
    benchmark::DoNotOptimize(parser.parse("host:512k,cuda:4m,rocm:1m", &value));
  }
}
BENCHMARK(BM_ParseKeyValue);

void BM_ReadTable(benchmark::State& state) {
  auto sources = config::Sources::from({{"MC_LOG_LEVEL", "info"}, {"MC_MODULES", "^cuda"}}, {});
  for (auto _ : state) {
    ModuleConfig cfg{};
    benchmark::DoNotOptimize(module_config_table().read(&cfg, *sources, nullptr));
    LogConfig log{};
    benchmark::DoNotOptimize(log_config_table().read(&log, *sources, nullptr));
  }
}
BENCHMARK(BM_ReadTable);

}  // namespace
