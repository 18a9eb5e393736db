// SPDX-License-Identifier: Apache-2.0
// The self transport's knobs (MC_SELF_*).
#pragma once

#include <cstddef>
#include <cstdint>

#include "ucs/config/table.h"

namespace mc::uct::self {

struct SelfConfig {
  size_t seg_size;        ///< largest bcopy / zcopy active message
  uint64_t am_queue_len;  ///< active messages queued before NoResource
};

const ucs::config::Table& self_config_table();

}  // namespace mc::uct::self
