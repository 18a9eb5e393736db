// SPDX-License-Identifier: Apache-2.0
// The metadata knobs every backend shares (MC_METADATA_KEY_PREFIX,
// MC_METADATA_TIMEOUT, MC_ETCD_LEASE_TTL, MC_METADATA_REFRESH_INTERVAL); a
// backend module declares its own
// (the redis module: MC_REDIS_PASSWORD, MC_REDIS_DB_INDEX).
#pragma once

#include <string>

#include "ucp/metadata/store.h"
#include "ucs/config/parser.h"
#include "ucs/config/registry.h"
#include "ucs/config/table.h"

namespace mc::metadata {

/// The shared metadata knobs, as read from the environment or config files.
struct MetadataConfig {
  std::string key_prefix;           ///< MC_METADATA_KEY_PREFIX
  ucs::config::Duration timeout{};  ///< MC_METADATA_TIMEOUT: bound of one request
  /// MC_ETCD_LEASE_TTL (the name Mooncake's docs use): lease of leased keys,
  /// the etcd lease and the redis expiry alike.
  ucs::config::Duration lease_ttl{};
  /// MC_METADATA_REFRESH_INTERVAL: how often an engine checks its own keys
  /// and puts again those the store lost; zero or inf: never.
  ucs::config::Duration refresh_interval{};
  /// MC_METADATA_MAX_VALUE: the largest value (or answer) read from the store.
  size_t max_value = 0;
  /// MC_METADATA_AUTH_TOKEN: sent to an HTTP metadata server as a bearer token.
  std::string auth_token;
};

/// The table of MetadataConfig (global knobs, prefix "MC_").
const ucs::config::Table& metadata_config_table();

/// Reads MetadataConfig from the process environment and config files;
/// InvalidParam with `*error` naming the variable when a value is bad:
/// also a timeout of 0 (every request needs a bound) and a lease TTL that is
/// not a whole number of seconds (leases are granted in seconds).
Result<MetadataConfig> read_metadata_config(std::string* error = nullptr);

/// StoreOptions from the knobs (timeout, lease_ttl; an inf TTL is no lease).
StoreOptions store_options(const MetadataConfig& config);

/// Registers the shared table and the tables of every loadable metadata
/// module with `registry` (loads the modules; idempotent). Call it before
/// anything warns about unknown MC_* variables, and from mc_info.
void register_metadata_config_tables(ucs::config::Registry& registry);

}  // namespace mc::metadata
