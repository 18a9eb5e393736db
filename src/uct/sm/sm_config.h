// SPDX-License-Identifier: Apache-2.0
// The knobs of the sm transport (MC_SM_*), declared next to the code that
// reads them and registered through the sm component.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ucs/config/table.h"

namespace mc::uct::sm {

struct SmConfig {
  uint64_t ring_size;                         ///< slots of each receive ring, a power of two
  size_t seg_size;                            ///< bytes of one ring slot, header included
  bool cma;                                   ///< try cross-memory attach for registered memory
  ucs::config::Duration peer_check_interval;  ///< how often progress() checks peers are alive
};

const ucs::config::Table& sm_config_table();

/// Reads the table and checks what the parsers cannot (power of two).
/// InvalidParam, logged, when a value is invalid.
ucs::Result<SmConfig> sm_config_read(const ucs::config::Sources& sources);

/// Slot sizes are rounded up to this, so every slot starts on a cache line.
inline constexpr size_t kSlotAlign = 64;

}  // namespace mc::uct::sm
