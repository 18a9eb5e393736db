// SPDX-License-Identifier: Apache-2.0
// The open connections of mc_metadata_server: a cap in all and one per peer
// address, kept by evicting the connection that has been idle the longest,
// so that idle or trickling clients cannot lock a good one out.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace mc::tools::metadata {

/// Thread-safe: the acceptor adds, each connection's thread marks itself
/// busy or idle and removes itself.
///
/// A connection is *idle* while it waits for a request or reads one (it has
/// not sent a whole request yet), *busy* from a whole request until its
/// answer is sent. At a cap, add() evicts the idle connection that started
/// waiting first: shutdown(SHUT_RDWR) of its socket, which ends the poll or
/// recv of its thread. Only when every connection in the way is busy is the
/// new one refused.
///
/// Invariant: a socket is shut down only while its entry is in the table,
/// under lock_, and its thread closes it only after remove(); so an evicted
/// socket's number is never one reused by a later accept.
class ConnectionTable {
 public:
  ConnectionTable(size_t max_connections, size_t max_per_peer)
      : max_connections_(max_connections), max_per_peer_(max_per_peer) {}

  /// Registers socket `fd` of `peer` (its address without the port), idle,
  /// evicting one idle connection when a cap is reached. Returns the id
  /// (never 0), or 0 when every connection in the way is busy: the caller
  /// refuses the new one. `*evicted` is set when one was evicted.
  uint64_t add(int fd, const std::string& peer, bool* evicted);

  /// A whole request arrived. False when the connection was evicted
  /// meanwhile: the caller leaves without answering.
  bool set_busy(uint64_t id);
  /// The answer is sent; the connection waits for its next request.
  void set_idle(uint64_t id);
  /// Forgets the connection; its socket may be closed after this.
  void remove(uint64_t id);

 private:
  struct Entry {
    int fd = -1;
    std::string peer;
    uint64_t idle_since = 0;  // stamp_ when it last became idle
    bool busy = false;
    bool evicted = false;
  };
  using Entries = std::map<uint64_t, Entry>;

  // The live idle connection with the smallest idle_since, of `peer` when
  // not null; end() when none.
  Entries::iterator oldest_idle(const std::string* peer);
  void evict(Entries::iterator it);

  const size_t max_connections_;
  const size_t max_per_peer_;
  std::mutex lock_;  // guards everything below
  Entries entries_;
  std::map<std::string, size_t> live_per_peer_;
  size_t live_ = 0;
  uint64_t next_id_ = 1;
  uint64_t stamp_ = 0;  // orders "became idle" events; ties cannot happen
};

}  // namespace mc::tools::metadata
