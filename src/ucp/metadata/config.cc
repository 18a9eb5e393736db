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
       cfg::field("ETCD_LEASE_TTL", "10s",
                  "Time to live of the etcd lease that an engine's keys are attached to; the lease "
                  "is kept alive while the engine lives, so a crashed engine's keys expire after "
                  "at most this long (whole seconds, at least 1).",
                  &MetadataConfig::etcd_lease_ttl, cfg::time_parser())});
  return table;
}

Result<MetadataConfig> read_metadata_config(std::string* error) {
  return cfg::read_table<MetadataConfig>(metadata_config_table(), error);
}

StoreOptions store_options(const MetadataConfig& config) {
  StoreOptions o;
  o.timeout = std::chrono::duration_cast<std::chrono::milliseconds>(config.timeout);
  if (o.timeout.count() <= 0) o.timeout = std::chrono::milliseconds(1);
  o.lease_ttl = std::chrono::duration_cast<std::chrono::seconds>(config.etcd_lease_ttl);
  if (config.etcd_lease_ttl.count() > 0 && o.lease_ttl.count() < 1) {
    o.lease_ttl = std::chrono::seconds(1);
  }
  return o;
}

}  // namespace mc::metadata
