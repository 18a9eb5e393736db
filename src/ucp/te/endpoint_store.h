// SPDX-License-Identifier: Apache-2.0
// EndpointStore: the Transfer Engine's open endpoints, one per segment, in a
// bounded cache (SIEVE by default, FIFO on MC_ENDPOINT_STORE_TYPE=FIFO). An
// entry leaving the cache (evicted, failed, its segment closed) is retired:
// it stays alive until its last transfer in flight has ended, so that work
// completes or fails and never vanishes.
#pragma once

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "ucp/api/ucp.h"
#include "ucp/te/te_config.h"
#include "ucs/datastruct/fifo_cache.h"
#include "ucs/datastruct/sieve_cache.h"
#include "ucs/sys/visibility.h"

namespace mc::te {

/// One endpoint to one segment, with the segment's rkeys unpacked for it.
struct EpEntry {
  int32_t segment = -1;
  uint64_t generation = 0;  ///< of the segment descriptor it was made from
  std::unique_ptr<ucp::Endpoint> ep;
  std::vector<std::unique_ptr<ucp::Rkey>> rkeys;  ///< by buffer index; null until used
  size_t inflight = 0;                            ///< UCP operations posted and not yet called back
  bool failed = false;                            ///< an operation failed: no new work goes to it
  /// (local, remote location) pairs whose path choice was logged.
  std::set<std::pair<std::string, std::string>> paths_logged;
  const std::pair<std::string, std::string>* last_logged = nullptr;  ///< in paths_logged
  /// Per lane: its rma_done_bytes when the NIC load was last sampled.
  std::vector<uint64_t> done_sampled;
  ~EpEntry() {
    rkeys.clear();  // an rkey must not outlive its endpoint
    ep.reset();
  }
};

/// Not thread-safe: the engine calls it under its lock.
class MC_INTERNAL EndpointStore {
 public:
  using Entry = std::shared_ptr<EpEntry>;
  /// What the store did since it was made (TransferEngine::getEndpointStoreStats).
  struct Counters {
    uint64_t inserted = 0;      ///< entries added
    uint64_t evicted = 0;       ///< taken out to make room
    uint64_t evicted_busy = 0;  ///< of those, with operations in flight
    uint64_t removed = 0;       ///< taken out by remove()
  };

  EndpointStore(EndpointStoreType type, size_t capacity);

  /// The entry of `segment`, or null.
  Entry get(int32_t segment);
  /// Adds (or replaces) the entry of `segment`; may evict another one.
  void insert(int32_t segment, Entry entry);
  /// Takes `segment`'s entry out (retired).
  void remove(int32_t segment);
  /// Entries in the cache now.
  size_t size() const;
  /// Destroys the retired entries with nothing in flight; returns how many
  /// remain.
  size_t reap();
  /// Retires every entry (engine shutdown).
  void retire_all();
  /// Entries retired and still draining.
  const std::vector<Entry>& retired() const { return retired_; }
  const Counters& counters() const { return counters_; }
  /// Calls fn(EpEntry&) for every entry, cached or retired.
  template <typename Fn>
  void for_each(Fn&& fn) const {
    std::visit([&](const auto& c) { c->for_each([&](const int32_t&, Entry& e) { fn(*e); }); },
               cache_);
    for (const Entry& e : retired_) fn(*e);
  }

 private:
  using Sieve = ucs::SieveCache<int32_t, Entry>;
  using Fifo = ucs::FifoCache<int32_t, Entry>;

  void retire(Entry& entry);

  std::vector<Entry> retired_;
  Counters counters_;
  std::variant<std::unique_ptr<Sieve>, std::unique_ptr<Fifo>> cache_;
};

}  // namespace mc::te
