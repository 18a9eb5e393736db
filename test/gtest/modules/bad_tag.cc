// SPDX-License-Identifier: Apache-2.0
// Test module whose build tag names another C++ runtime: the loader must refuse it.
#include "ucs/module/module_abi.h"

namespace {
int create(void** object, char*, size_t) {
  *object = nullptr;
  return 1;
}
void destroy(void*) {}
}  // namespace

extern "C" __attribute__((visibility("default"))) const mc_module_desc_t* mc_module_entry(void) {
  static const mc_module_desc_t desc = {MC_MODULE_ABI_VERSION, sizeof(mc_module_desc_t),
                                        "abi1;some-other-runtime", "test", "badtag", "0", 1,
                                        create, destroy};
  return &desc;
}
