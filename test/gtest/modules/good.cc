// SPDX-License-Identifier: Apache-2.0
// Test module that loads: its object is a counter the test can read.
#include <cstdio>

#include "ucs/module/module_abi.h"

namespace {

struct GoodObject {
  int magic = 0x600d;
};

int good_create(void** object, char*, size_t) {
  *object = new GoodObject();
  return 0;
}

void good_destroy(void* object) { delete static_cast<GoodObject*>(object); }

}  // namespace

MC_MODULE_DEFINE("test", "good", "1.2.3", 7, good_create, good_destroy)
