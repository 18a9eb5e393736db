// SPDX-License-Identifier: Apache-2.0
// The Transfer Engine configuration table.
#include "ucp/te/te_config.h"

namespace mc::te {

namespace cfg = ucs::config;

const cfg::Table& te_config_table() {
  static const cfg::Table table(
      "transfer engine", "",
      {cfg::field("MIN_RPC_PORT", "15000",
                  "Lowest port the engine's RPC listener (the handshake) may bind, when "
                  "local_server_name gives no port.",
                  &TeConfig::min_rpc_port, cfg::uint_parser(1, 65535)),
       cfg::field("MAX_RPC_PORT", "17000", "Highest port the RPC listener may bind.",
                  &TeConfig::max_rpc_port, cfg::uint_parser(1, 65535)),
       cfg::field("HANDSHAKE_MAX_LENGTH", "1m",
                  "Largest handshake message (a segment descriptor) the engine sends or "
                  "accepts; a longer one is refused with an error naming both sizes.",
                  &TeConfig::handshake_max_length, cfg::size_parser(256, size_t{1} << 30)),
       cfg::field("HANDSHAKE_TIMEOUT", "5s",
                  "Bound on one handshake with a peer's RPC listener, connection included; "
                  "also the time the RPC listener gives a connection, from its accept, to send "
                  "its whole request and take the reply.",
                  &TeConfig::handshake_timeout, cfg::time_parser()),
       cfg::field("ENDPOINT_STORE_TYPE", "SIEVE",
                  "Eviction policy of the cache of open endpoints: SIEVE or FIFO.",
                  &TeConfig::endpoint_store_type,
                  cfg::enum_parser<EndpointStoreType>(
                      {{"SIEVE", EndpointStoreType::Sieve}, {"FIFO", EndpointStoreType::Fifo}})),
       cfg::field("MAX_EP_PER_CTX", "256",
                  "Most endpoints one engine keeps open; opening one more evicts one (its "
                  "transfers in flight still complete).",
                  &TeConfig::max_ep_per_ctx, cfg::uint_parser(1, 1 << 20)),
       cfg::field("RPC_BIND_ADDR", "",
                  "IPv4 address the RPC listener binds; empty: every address (0.0.0.0). Set it "
                  "to the address peers use, so the listener is not reachable on the others.",
                  &TeConfig::rpc_bind_addr, cfg::string_parser()),
       cfg::field("AUTH_TOKEN", "",
                  "Shared secret: when set, the RPC listener refuses (and logs) a handshake that "
                  "does not carry the same token, and this engine sends it to its peers. Sent "
                  "in clear text; it gates the segment descriptor, not the data path.",
                  &TeConfig::auth_token, cfg::string_parser()),
       cfg::field("RPC_MAX_PENDING", "64",
                  "Connections the RPC listener keeps open while their handshake is not done; "
                  "one more closes the oldest (served first if its request is whole), so that "
                  "silent or slow clients cannot shut out a good one.",
                  &TeConfig::rpc_max_pending, cfg::uint_parser(1, 65536)),
       cfg::field("RPC_MAX_PENDING_PER_PEER", "16",
                  "The same bound for the connections from one IP address.",
                  &TeConfig::rpc_max_pending_per_peer, cfg::uint_parser(1, 65536))});
  return table;
}

void register_te_config_tables(cfg::Registry& registry) {
  registry.add<TeConfig>(te_config_table());
}

}  // namespace mc::te
