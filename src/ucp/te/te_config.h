// SPDX-License-Identifier: Apache-2.0
// The Transfer Engine's knobs (MC_MIN_RPC_PORT, MC_MAX_EP_PER_CTX, ...): one
// table, read by TransferEngine::init() and printed by mc_info -c / -f.
// MC_TRANSFER_TIMEOUT and MC_RETRY_CNT are UCP knobs the engine reuses.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "ucp/api/worker.h"
#include "ucs/config/parser.h"
#include "ucs/config/registry.h"
#include "ucs/config/table.h"
#include "ucs/sys/visibility.h"

namespace mc::te {

/// Which cache keeps the open endpoints.
enum class EndpointStoreType { Sieve, Fifo };

struct TeConfig {
  uint64_t min_rpc_port = 15000;                                     ///< MC_MIN_RPC_PORT
  uint64_t max_rpc_port = 17000;                                     ///< MC_MAX_RPC_PORT
  size_t handshake_max_length = 1 << 20;                             ///< MC_HANDSHAKE_MAX_LENGTH
  ucs::config::Duration handshake_timeout{};                         ///< MC_HANDSHAKE_TIMEOUT
  EndpointStoreType endpoint_store_type = EndpointStoreType::Sieve;  ///< MC_ENDPOINT_STORE_TYPE
  uint64_t max_ep_per_ctx = 65536;                                   ///< MC_MAX_EP_PER_CTX
  std::string rpc_bind_addr;                                         ///< MC_RPC_BIND_ADDR
  std::string auth_token;                                            ///< MC_AUTH_TOKEN
  uint64_t rpc_max_pending = 64;                                     ///< MC_RPC_MAX_PENDING
  uint64_t rpc_max_pending_per_peer = 16;   ///< MC_RPC_MAX_PENDING_PER_PEER
  uint64_t handshake_listen_backlog = 128;  ///< MC_HANDSHAKE_LISTEN_BACKLOG: listen() backlog
  /// MC_WORKERS_PER_CTX: Mooncake's worker threads per device; accepted and
  /// logged (workers_note()), one progress thread drives every device here.
  std::optional<uint64_t> workers_per_ctx;
  bool dest_device_affinity = false;  ///< MC_ENABLE_DEST_DEVICE_AFFINITY (RailPreference)
  bool path_roundrobin = false;       ///< MC_PATH_ROUNDROBIN (RailPreference)
  bool intra_nvlink = false;          ///< MC_INTRA_NVLINK: cuda_ipc required (nvlink_check)
  bool force_mnnvl = false;           ///< MC_FORCE_MNNVL: cuda_ipc with fabric handles required
  /// MC_TE_ASYNC_MODE: where the worker's transports (tcp's sockets) are
  /// served: in progress() calls, by the callers and the progress thread
  /// (default), or on the worker's event-loop thread.
  ucp::AsyncMode async_mode = ucp::AsyncMode::Progress;
  size_t notify_max_size = 64 << 10;    ///< MC_NOTIFY_MAX_SIZE
  uint64_t notify_queue_length = 1024;  ///< MC_NOTIFY_QUEUE_LENGTH
};

/// Why `config` cannot start an engine before anything is opened: the NVLink
/// knobs MC_INTRA_NVLINK and MC_FORCE_MNNVL set together. Empty when it can.
/// Pure; thread-safe.
MC_INTERNAL std::string unsupported_knobs(const TeConfig& config);

/// What the NVLink knobs need of the transports, as init sees them.
struct NvlinkFacts {
  bool cuda_ipc_usable = false;  ///< a cuda_ipc resource is enabled in the context
  std::string cuda_ipc_why;      ///< else why not (not built, no GPU, filtered)
  std::string fabric_why;        ///< why fabric handles are unavailable; empty: available
};

/// Why the NVLink knobs of `config` cannot be met given `facts` (init fails
/// with it); empty when they can or are off. Pure.
MC_INTERNAL std::string nvlink_check(const TeConfig& config, const NvlinkFacts& facts);

/// The line init() logs when MC_WORKERS_PER_CTX is set (empty when not):
/// what mc does instead of Mooncake's per-device worker threads.
MC_INTERNAL std::string workers_note(const TeConfig& config);

MC_INTERNAL const ucs::config::Table& te_config_table();

/// Registers the Transfer Engine table with `registry` (idempotent).
MC_INTERNAL void register_te_config_tables(ucs::config::Registry& registry);

}  // namespace mc::te
