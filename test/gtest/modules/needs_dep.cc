// SPDX-License-Identifier: Apache-2.0
// Test module with a dependency that cannot be found at run time.
#include "ucs/module/module_abi.h"

extern "C" int mc_testdep_value(void);

namespace {
int create(void** object, char*, size_t) {
  *object = reinterpret_cast<void*>(static_cast<intptr_t>(mc_testdep_value()));
  return 0;
}
void destroy(void*) {}
}  // namespace

MC_MODULE_DEFINE("test", "needsdep", "0", 1, create, destroy)
