// SPDX-License-Identifier: Apache-2.0
// The redis metadata backend's knobs (MC_REDIS_*).
#pragma once

#include <cstdint>
#include <string>

#include "ucs/config/table.h"

namespace mc::metadata::redis {

struct RedisConfig {
  std::string password;   ///< MC_REDIS_PASSWORD
  uint64_t db_index = 0;  ///< MC_REDIS_DB_INDEX
};

const ucs::config::Table& redis_config_table();

}  // namespace mc::metadata::redis
