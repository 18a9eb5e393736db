// SPDX-License-Identifier: Apache-2.0
// Test module built for a future module ABI: the loader must refuse it.
#include "ucs/module/module_abi.h"

namespace {
int create(void** object, char*, size_t) {
  *object = nullptr;
  return 1;
}
void destroy(void*) {}
}  // namespace

extern "C" __attribute__((visibility("default"))) const mc_module_desc_t* mc_module_entry(void) {
  static const mc_module_desc_t desc = {MC_MODULE_ABI_VERSION + 41, sizeof(mc_module_desc_t),
                                        MC_MODULE_BUILD_TAG, "test", "badabi", "0", 1, create,
                                        destroy};
  return &desc;
}
