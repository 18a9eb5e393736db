// SPDX-License-Identifier: Apache-2.0
// The redis metadata backend's configuration table.
#include "ucp/metadata/redis/redis_config.h"

#include "ucs/config/parser.h"

namespace mc::metadata::redis {

namespace cfg = ucs::config;

const cfg::Table& redis_config_table() {
  static const cfg::Table table(
      "redis metadata backend", "REDIS_",
      {cfg::field("PASSWORD", "",
                  "Password of the Redis metadata server (AUTH), when the connection string "
                  "carries none; empty: no AUTH.",
                  &RedisConfig::password, cfg::string_parser()),
       cfg::field("DB_INDEX", "0",
                  "Redis database (SELECT) of the metadata keys, when the connection string "
                  "carries none.",
                  &RedisConfig::db_index, cfg::uint_parser(0, 1u << 20))});
  return table;
}

}  // namespace mc::metadata::redis
