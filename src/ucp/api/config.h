// SPDX-License-Identifier: Apache-2.0
// The knobs of UCP (MC_TLS, MC_SLICE_SIZE, ...): one table, read when a
// Context is created and printed by mc_info -c / -f.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "ucs/config/parser.h"
#include "ucs/config/registry.h"
#include "ucs/config/table.h"
#include "uct/api/types.h"
#include "ucs/sys/visibility.h"

namespace mc::ucp {

/// How many threads may use one worker (MC_THREAD_MODE).
enum class ThreadMode {
  Single,  ///< one thread at a time drives the worker and what it made
  Multi,   ///< any thread: a worker mutex serialises the public methods
};

/// Every UCP knob, as read from the environment, config files or code.
struct ContextConfig {
  ucs::config::AllowList tls;          ///< MC_TLS: transports, with aliases shm and net
  ucs::config::AllowList net_devices;  ///< MC_NET_DEVICES: devices of network transports
  ucs::config::AllowList shm_devices;  ///< MC_SHM_DEVICES: devices of shared-memory transports
  size_t max_rma_rails = 2;            ///< MC_MAX_RMA_RAILS: bandwidth lanes for RMA
  size_t max_eager_rails = 1;          ///< MC_MAX_EAGER_RAILS: bandwidth lanes for active messages
  size_t loopback_rails = 1;           ///< MC_LOOPBACK_RAILS: tcp rails to a same-namespace peer
  bool proto_info = false;             ///< MC_PROTO_INFO: log lane and protocol choices
  size_t slice_size = 65536;           ///< MC_SLICE_SIZE: multi-lane slice bytes
  uint64_t fragment_ratio = 4;         ///< MC_FRAGMENT_RATIO: tail merge ratio
  uint64_t retry_cnt = 9;              ///< MC_RETRY_CNT: re-issues of one failed slice
  uint64_t slices_in_flight = 8;       ///< MC_SLICES_IN_FLIGHT: per lane and request
  ucs::config::Duration transfer_timeout{};     ///< MC_TRANSFER_TIMEOUT: request deadline
  std::optional<size_t> bcopy_thresh;           ///< MC_BCOPY_THRESH: nullopt = auto
  std::optional<size_t> zcopy_thresh;           ///< MC_ZCOPY_THRESH: nullopt = auto
  std::optional<size_t> rndv_thresh;            ///< MC_RNDV_THRESH: nullopt = auto
  ThreadMode thread_mode = ThreadMode::Single;  ///< MC_THREAD_MODE: default of new workers
  ucs::config::Duration poll_interval{};        ///< MC_POLL_INTERVAL: wait() without event fds
  std::optional<ucs::config::Duration> connect_timeout;  ///< MC_CONNECT_TIMEOUT: nullopt = auto
  /// MC_LANE_RECONNECT_INTERVAL: first delay before a failed lane is connected
  /// again (doubling per failed attempt, up to 8 times); zero: never.
  ucs::config::Duration lane_reconnect_interval{};
  /// MC_RNDV_FRAG_SIZE: bytes of one staging fragment per memory type of the
  /// local buffer ("host", "cuda", "cuda-managed"); a missing type takes its
  /// default (rndv_frag_size()).
  std::map<std::string, size_t> rndv_frag_size;
  uint64_t staging_depth = 4;  ///< MC_STAGING_DEPTH: bounce buffers of one staged request
  bool force_tcp = false;      ///< MC_FORCE_TCP: tcp only, as MC_TLS=tcp (see choose_tls)
  bool force_hca = false;      ///< MC_FORCE_HCA: the rc_* (RDMA) transports only, or fail
};

/// The transports UCP may use, once MC_TLS, MC_FORCE_TCP and MC_FORCE_HCA are
/// combined (choose_tls).
struct TlsChoice {
  ucs::config::AllowList tls;  ///< what resources are filtered by
  std::string origin;          ///< "MC_TLS=<value>" or "MC_FORCE_TCP=y (as MC_TLS=tcp)"
  std::string note;            ///< when not empty, a line to log at warn level
  bool rdma_required = false;  ///< MC_FORCE_HCA: no rc_* resource is an error
};

/// The one place the transport knobs are combined. MC_FORCE_TCP means
/// MC_TLS=tcp and MC_FORCE_HCA means MC_TLS=rc_verbs,rc_mlx5 (Mooncake's
/// meanings); either wins over MC_TLS, with a note saying so when MC_TLS is
/// not "all". Both set: InvalidParam, `*error` naming both. Pure; thread-safe.
MC_API ucs::Result<TlsChoice> choose_tls(const ContextConfig& config, std::string* error);

/// The staging fragment of memory type `type` from MC_RNDV_FRAG_SIZE, or its
/// default (host 512 KiB, cuda and cuda-managed 4 MiB).
MC_API size_t rndv_frag_size(const ContextConfig& config, uct::MemType type);

/// The table of ContextConfig (global knobs, prefix "MC_").
MC_API const ucs::config::Table& context_config_table();

/// Registers the UCP tables with `registry` (idempotent). Context::create()
/// calls it; tools call it to list the knobs without creating a context.
MC_API void register_ucp_config_tables(ucs::config::Registry& registry);

/// Whether transport `tl_name` passes MC_TLS `list`, expanding the aliases
/// `shm` (sm) and `net` (tcp and every rc_* transport). Pure; thread-safe.
MC_API bool tl_allowed(const ucs::config::AllowList& list, std::string_view tl_name);

}  // namespace mc::ucp
