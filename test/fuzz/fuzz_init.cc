// SPDX-License-Identifier: Apache-2.0
// Shared by every fuzz target: logging set up once from MC_LOG_LEVEL (the
// runner sets fatal), so refusals do not flood standard error.
#include <cstdlib>

#include "ucs/log/log.h"

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  if (mc::ucs::log_init("mc_fuzz") != mc::ucs::Status::Ok) std::abort();
  return 0;
}
