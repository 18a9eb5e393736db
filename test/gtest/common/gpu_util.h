// SPDX-License-Identifier: Apache-2.0
// Whether the GPU tests can run here: cuda_copy loaded with a device.
#pragma once

#include <string>

#include "uct/base/component_loader.h"

namespace mc::test {

/// Empty when cuda_copy has a device; otherwise why not ("no GPU: ..."),
/// for GTEST_SKIP().
inline std::string no_gpu_reason() {
  uct::Component* cuda = uct::find_component("cuda_copy");
  if (cuda && !cuda->md_names().empty()) return "";
  return std::string("no GPU: ") + (cuda ? cuda->unavailable_reason() : "no cuda_copy module");
}

}  // namespace mc::test
