// SPDX-License-Identifier: Apache-2.0
// The shared metadata configuration table.
#include "ucp/metadata/config.h"

#include <chrono>

namespace mc::metadata {

namespace cfg = ucs::config;

const cfg::Table& metadata_config_table() {
  static const cfg::Table table(
      "metadata", "",
      {cfg::field(
           "METADATA_KEY_PREFIX", "mooncake",
           "Prefix of every metadata key: <prefix>/rpc_meta/<server>, <prefix>/ram/<segment>, "
           "<prefix>/nvmeof/<segment>.",
           &MetadataConfig::key_prefix, cfg::string_parser()),
       cfg::field("METADATA_TIMEOUT", "5s",
                  "Bound of one request to the metadata server (http, etcd, redis), connecting "
                  "included; an unreachable server fails within it.",
                  &MetadataConfig::timeout, cfg::time_parser()),
       cfg::field(
           "ETCD_LEASE_TTL", "10s",
           "Time to live of an engine's keys where the backend has leases: etcd attaches "
           "them to a lease, redis sets them with this expiry (SET EX); the store keeps "
           "them alive every third of it while the engine lives, so a crashed engine's "
           "keys expire after at most this long (whole seconds, at least 1; 0 or inf: no "
           "lease, keys stay until removed). The name is Mooncake's; it applies to redis too.",
           &MetadataConfig::lease_ttl, cfg::time_parser()),
       cfg::field("METADATA_REFRESH_INTERVAL", "5s",
                  "How often a live engine checks its own keys (rpc_meta, ram) in the metadata "
                  "store and puts again those the store lost (a server restarted empty, an "
                  "expired lease); an outage is logged once when noticed, and the re-publication "
                  "once when the store answers again. 0 or inf: never.",
                  &MetadataConfig::refresh_interval, cfg::time_parser())});
  return table;
}

Result<MetadataConfig> read_metadata_config(std::string* error) {
  return cfg::read_table<MetadataConfig>(metadata_config_table(), error);
}

StoreOptions store_options(const MetadataConfig& config) {
  StoreOptions o;
  o.timeout = std::chrono::duration_cast<std::chrono::milliseconds>(config.timeout);
  if (o.timeout.count() <= 0) o.timeout = std::chrono::milliseconds(1);
  if (config.lease_ttl == ucs::config::Duration::max()) {
    o.lease_ttl = std::chrono::seconds(0);
  } else {
    o.lease_ttl = std::chrono::duration_cast<std::chrono::seconds>(config.lease_ttl);
    if (config.lease_ttl.count() > 0 && o.lease_ttl.count() < 1) {
      o.lease_ttl = std::chrono::seconds(1);
    }
  }
  return o;
}

}  // namespace mc::metadata
