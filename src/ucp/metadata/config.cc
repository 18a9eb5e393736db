// SPDX-License-Identifier: Apache-2.0
// The shared metadata configuration table.
#include "ucp/metadata/config.h"

#include <chrono>
#include <sstream>

#include "ucs/log/log.h"

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
                  "included; an unreachable server fails within it. Must be more than 0 (a "
                  "request always has a bound); inf waits as long as the server takes.",
                  &MetadataConfig::timeout, cfg::time_parser()),
       cfg::field(
           "ETCD_LEASE_TTL", "10s",
           "Time to live of an engine's keys where the backend has leases: etcd attaches "
           "them to a lease, redis sets them with this expiry (SET EX); the store keeps "
           "them alive every third of it while the engine lives, so a crashed engine's "
           "keys expire after at most this long (whole seconds, at least 1; 0 or inf: no "
           "lease, keys stay until removed; a value that is not whole seconds, e.g. 1.5s, is "
           "refused). The name is Mooncake's; it applies to redis too.",
           &MetadataConfig::lease_ttl, cfg::time_parser()),
       cfg::field("METADATA_REFRESH_INTERVAL", "5s",
                  "How often a live engine checks its own keys (rpc_meta, ram) in the metadata "
                  "store and puts again those the store lost (a server restarted empty, an "
                  "expired lease); an outage is logged once when noticed, and the re-publication "
                  "once when the store answers again. 0 or inf: never.",
                  &MetadataConfig::refresh_interval, cfg::time_parser()),
       cfg::field("METADATA_MAX_VALUE", "16m",
                  "The largest value read from the metadata store, and the largest answer of "
                  "its server: a longer one fails (checked while reading over http and etcd, "
                  "with STRLEN before reading over redis), so a hostile or broken store cannot "
                  "make an engine allocate without bound. A segment descriptor takes about 200 "
                  "bytes per registered buffer.",
                  &MetadataConfig::max_value, cfg::size_parser(4096, size_t{1} << 31)),
       cfg::field("METADATA_AUTH_TOKEN", "",
                  "Shared token sent to an HTTP metadata server as 'Authorization: Bearer "
                  "<token>' (mc_metadata_server --auth-token refuses requests without it); "
                  "empty: none. Sent in clear text.",
                  &MetadataConfig::auth_token, cfg::string_parser())});
  return table;
}

Result<MetadataConfig> read_metadata_config(std::string* error) {
  std::string why;
  Result<MetadataConfig> config = cfg::read_table<MetadataConfig>(metadata_config_table(), &why);
  auto refuse = [&](const std::string& text) {
    MC_LOG(error) << text;
    if (error) *error = text;
    return Status::InvalidParam;
  };
  if (!config.ok()) {
    if (error) *error = why;
    return config;
  }
  if (config->timeout.count() <= 0) {
    return refuse("invalid value '0' for MC_METADATA_TIMEOUT: every request to the metadata "
                  "server needs a bound; give a time above 0, or inf for none");
  }
  const auto ttl = config->lease_ttl;
  if (ttl != cfg::Duration::max() && ttl.count() % 1000000000 != 0) {
    const int64_t below = ttl.count() / 1000000000;
    std::ostringstream given;
    given << static_cast<double>(ttl.count()) / 1e9;
    return refuse("invalid value for MC_ETCD_LEASE_TTL: " + given.str() +
                  " s is not a whole number of seconds (leases are granted in seconds); give " +
                  (below > 0 ? std::to_string(below) + "s or " : std::string()) +
                  std::to_string(below + 1) + "s");
  }
  return config;
}

StoreOptions store_options(const MetadataConfig& config) {
  StoreOptions o;
  o.timeout = config.timeout == ucs::config::Duration::max()
                  ? std::chrono::milliseconds(std::chrono::hours(24 * 365))
                  : std::chrono::duration_cast<std::chrono::milliseconds>(config.timeout);
  if (o.timeout.count() <= 0) o.timeout = std::chrono::milliseconds(1);
  if (config.lease_ttl == ucs::config::Duration::max()) {
    o.lease_ttl = std::chrono::seconds(0);
  } else {
    o.lease_ttl = std::chrono::duration_cast<std::chrono::seconds>(config.lease_ttl);
    if (config.lease_ttl.count() > 0 && o.lease_ttl.count() < 1) {
      o.lease_ttl = std::chrono::seconds(1);
    }
  }
  o.max_value = config.max_value;
  o.auth_token = config.auth_token;
  return o;
}

}  // namespace mc::metadata
