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
       cfg::field("TE_ASYNC_MODE", "progress",
                  "Where the engine's transports are served (tcp's sockets: a peer's puts and "
                  "gets, the replies to ours): progress - in progress passes, of callers polling "
                  "a status and of the progress thread, which polls on for 200 us after its last "
                  "work and then sleeps on the sockets; thread - on the UCP worker's event-loop "
                  "thread (a thread hop per message, about 0.6x the throughput over tcp; served "
                  "even while the engine's lock is held).",
                  &TeConfig::async_mode,
                  cfg::enum_parser<ucp::AsyncMode>({{"progress", ucp::AsyncMode::Progress},
                                                    {"thread", ucp::AsyncMode::Thread}})),
       cfg::field("MAX_EP_PER_CTX", "65536",
                  "Most endpoints one engine keeps open; opening one more evicts one (its "
                  "transfers in flight still complete).",
                  &TeConfig::max_ep_per_ctx, cfg::uint_parser(1, 1 << 20)),
       cfg::field("RPC_BIND_ADDR", "",
                  "IPv4 or IPv6 address the RPC listener binds; empty: every address, IPv4 and "
                  "IPv6 (::, or 0.0.0.0 where IPv6 is off). Set it to the address peers use, so "
                  "the listener is not reachable on the others.",
                  &TeConfig::rpc_bind_addr, cfg::string_parser()),
       cfg::field("AUTH_TOKEN", "",
                  "Shared secret: when set, the RPC listener refuses (and logs) a handshake or a "
                  "notification that does not carry the same token, and this engine sends it to "
                  "its peers. Sent in clear text; it gates the segment descriptor and "
                  "notifications, not the data path.",
                  &TeConfig::auth_token, cfg::string_parser()),
       cfg::field("RPC_MAX_PENDING", "64",
                  "Connections the RPC listener keeps open while their handshake is not done; "
                  "one more closes the oldest (served first if its request is whole), so that "
                  "silent or slow clients cannot shut out a good one.",
                  &TeConfig::rpc_max_pending, cfg::uint_parser(1, 65536)),
       cfg::field("RPC_MAX_PENDING_PER_PEER", "16",
                  "The same bound for the connections from one IP address.",
                  &TeConfig::rpc_max_pending_per_peer, cfg::uint_parser(1, 65536)),
       cfg::field("HANDSHAKE_LISTEN_BACKLOG", "128",
                  "Backlog of the RPC listener's socket (listen()): handshake connections the "
                  "kernel queues before the listener accepts them. The kernel caps it at "
                  "net.core.somaxconn.",
                  &TeConfig::handshake_listen_backlog, cfg::uint_parser(1, 65535)),
       cfg::field("WORKERS_PER_CTX", "auto",
                  "Mooncake's worker threads per RDMA device. mc has no per-device threads: the "
                  "engine's one progress thread drives every device's queues, and a transfer's "
                  "slices are spread over devices by MC_MAX_RMA_RAILS and MC_SLICES_IN_FLIGHT. "
                  "A value is accepted (1-64) and has no effect; init logs so at info level.",
                  &TeConfig::workers_per_ctx, cfg::auto_parser(cfg::uint_parser(1, 64))),
       cfg::field("ENABLE_DEST_DEVICE_AFFINITY", "n",
                  "Among the lanes topology ranks equal, a transfer takes first those whose "
                  "remote device has the local device's name (mlx5_0 to mlx5_0: rail-optimised "
                  "fabrics). The engine's path report shows the ranks.",
                  &TeConfig::dest_device_affinity, cfg::bool_parser()),
       cfg::field("PATH_ROUNDROBIN", "n",
                  "Round robin over the paths: the slices of a large transfer go over every "
                  "healthy lane of the endpoint (MC_MAX_RMA_RAILS of them) instead of only the "
                  "best-ranked; ranks then only order where a failed slice moves.",
                  &TeConfig::path_roundrobin, cfg::bool_parser()),
       cfg::field("INTRA_NVLINK", "n",
                  "Mooncake: intra-node NVLink as the main transport. The cuda_ipc transport "
                  "carries GPU-to-GPU transfers between processes of this host ahead of staging "
                  "whenever it reaches; with this knob it must: engine init fails, naming why, "
                  "when cuda_ipc is not usable (not built, no GPU, filtered by MC_TLS). Cannot "
                  "be combined with MC_FORCE_MNNVL.",
                  &TeConfig::intra_nvlink, cfg::bool_parser()),
       cfg::field("FORCE_MNNVL", "n",
                  "Mooncake: multi-node NVLink whatever RDMA NICs exist. cuda_ipc exports GPU "
                  "memory only as fabric handles (MC_CUDA_IPC_FABRIC=y); engine init fails, "
                  "naming why, when fabric handles are unavailable (driver version, no IMEX "
                  "channel, not in an NVLink domain) or cuda_ipc is not usable.",
                  &TeConfig::force_mnnvl, cfg::bool_parser()),
       cfg::field("NOTIFY_MAX_SIZE", "64k",
                  "Largest notification (name and notify_msg together, in bytes) this engine "
                  "sends or takes; a larger one is refused with MessageTruncated (-15), at the "
                  "sender before anything is sent. Its frame must also fit "
                  "MC_HANDSHAKE_MAX_LENGTH.",
                  &TeConfig::notify_max_size, cfg::size_parser(1, size_t{16} << 20)),
       cfg::field("NOTIFY_QUEUE_LENGTH", "1024",
                  "Notifications this engine keeps until getNotifies takes them; with the queue "
                  "full, one more is refused and its sender gets NoResource (-2), nothing is "
                  "dropped. At most MC_NOTIFY_QUEUE_LENGTH x MC_NOTIFY_MAX_SIZE bytes are held.",
                  &TeConfig::notify_queue_length, cfg::uint_parser(1, 1 << 24))});
  return table;
}

std::string unsupported_knobs(const TeConfig& config) {
  if (config.intra_nvlink && config.force_mnnvl) {
    return "MC_INTRA_NVLINK and MC_FORCE_MNNVL cannot be combined (intra-node and multi-node "
           "NVLink exclude each other: set one)";
  }
  return "";
}

std::string nvlink_check(const TeConfig& config, const NvlinkFacts& facts) {
  const char* knob = config.intra_nvlink  ? "MC_INTRA_NVLINK"
                     : config.force_mnnvl ? "MC_FORCE_MNNVL"
                                          : nullptr;
  if (!knob) return "";
  if (!facts.cuda_ipc_usable) {
    return std::string(knob) + "=y, but the cuda_ipc transport is not usable: " +
           (facts.cuda_ipc_why.empty() ? "no cuda_ipc resource" : facts.cuda_ipc_why);
  }
  if (config.force_mnnvl && !facts.fabric_why.empty()) {
    return "MC_FORCE_MNNVL=y, but fabric handles are unavailable: " + facts.fabric_why;
  }
  return "";
}

std::string workers_note(const TeConfig& config) {
  if (!config.workers_per_ctx) return "";
  return "MC_WORKERS_PER_CTX=" + std::to_string(*config.workers_per_ctx) +
         " has no effect: mc runs no worker threads per device; the engine's progress thread "
         "drives every device (see MC_MAX_RMA_RAILS and MC_SLICES_IN_FLIGHT for spreading)";
}

void register_te_config_tables(cfg::Registry& registry) {
  registry.add<TeConfig>(te_config_table());
}

}  // namespace mc::te
