// SPDX-License-Identifier: Apache-2.0
// Test module whose create() refuses with a reason, as a transport without
// its hardware would.
#include <cstdio>

#include "ucs/module/module_abi.h"

namespace {

int create(void** object, char* err, size_t err_len) {
  *object = nullptr;
  std::snprintf(err, err_len, "no test device: simulated failure");
  return -1;
}

void destroy(void*) {}

}  // namespace

MC_MODULE_DEFINE("test", "failcreate", "0", 1, create, destroy)
