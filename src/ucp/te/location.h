// SPDX-License-Identifier: Apache-2.0
// Memory locations of registered buffers: "cpu:N" (NUMA node N), "cuda:N"
// (GPU N), and "*": detect the NUMA node the pages live on.
#pragma once

#include <cstddef>
#include <string>

#include "ucs/status/status.h"
#include "ucs/sys/visibility.h"

namespace mc::te {

/// Whether `location` is "cpu:N", "cuda:N" or "*".
MC_INTERNAL bool location_valid(const std::string& location);

/// Whether a buffer registered at `location` is GPU memory ("cuda:N").
MC_INTERNAL bool location_is_gpu(const std::string& location);

/// The NUMA node of the first page of [addr, addr + len) through
/// move_pages(2) in query mode: "cpu:N". NoElem with `*error` set when the
/// kernel cannot tell (page not yet touched, no NUMA support).
MC_INTERNAL ucs::Result<std::string> detect_location(const void* addr, size_t len,
                                                     std::string* error);

}  // namespace mc::te
