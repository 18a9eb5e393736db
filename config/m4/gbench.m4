# SPDX-License-Identifier: Apache-2.0
# Google Benchmark: the micro-benchmarks in test/bench.
AC_DEFUN([MC_CHECK_GBENCH], [
  MC_CHECK_DEP([benchmark], [Google Benchmark],
    [#include <benchmark/benchmark.h>],
    [benchmark::Initialize(nullptr, nullptr);], [-lbenchmark -lpthread])
])
