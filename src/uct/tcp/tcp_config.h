// SPDX-License-Identifier: Apache-2.0
// The knobs of the tcp transport (MC_TCP_*), read through src/ucs/config.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "ucs/config/parser.h"
#include "ucs/config/table.h"

namespace mc::uct::tcp {

/// Ports a listening socket may bind: first == last == 0 means "any free port".
struct PortRange {
  uint16_t first = 0;
  uint16_t last = 0;
  bool operator==(const PortRange&) const = default;
};

/// The knobs of the tcp transport; see tcp_config_table() for each one's doc.
struct TcpConfig {
  ucs::config::AllowList devices;   ///< network devices to offer
  uint64_t conns;                   ///< connections per endpoint
  size_t stripe_thresh;             ///< puts/gets above this are split across conns
  size_t seg_size;                  ///< bcopy bounce buffer and largest active message
  uint64_t max_outstanding;         ///< operations in flight per endpoint
  uint64_t am_queue_len;            ///< received AMs awaiting progress() before reading pauses
  std::optional<size_t> sndbuf;     ///< SO_SNDBUF; nullopt / 0: kernel default
  std::optional<size_t> rcvbuf;     ///< SO_RCVBUF; nullopt / 0: kernel default
  bool nodelay;                     ///< TCP_NODELAY
  bool keepalive;                   ///< SO_KEEPALIVE
  ucs::config::Duration keepidle;   ///< TCP_KEEPIDLE
  ucs::config::Duration keepintvl;  ///< TCP_KEEPINTVL
  uint64_t keepcnt;                 ///< TCP_KEEPCNT
  std::optional<ucs::config::Duration> user_timeout;  ///< TCP_USER_TIMEOUT; nullopt: kernel default
  ucs::config::Duration conn_timeout;                 ///< connection establishment deadline
  PortRange port_range;                               ///< listening ports
  uint64_t listen_backlog;                            ///< listen(2) backlog
  ucs::config::Duration accept_timeout;               ///< an accepted connection's hello deadline
  uint64_t max_pending_accepts;                       ///< accepted connections without a hello
};

/// The "tcp transport" table, prefix "TCP_".
const ucs::config::Table& tcp_config_table();

/// "0" or "<first>-<last>" (a single port "N" is the range N-N).
ucs::config::Parser<PortRange> port_range_parser();

}  // namespace mc::uct::tcp
