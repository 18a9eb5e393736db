// SPDX-License-Identifier: Apache-2.0
// Entry point of mc_bench: Google Benchmark's main, with mc's logging set up.
#include <benchmark/benchmark.h>

#include "ucs/log/log.h"

int main(int argc, char** argv) {
  if (mc::ucs::is_error(mc::ucs::log_init(argv[0]))) return 1;
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
