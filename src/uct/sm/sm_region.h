// SPDX-License-Identifier: Apache-2.0
// The registrations of this process, process-wide: what the target side of
// the ring fallback checks a peer's put/get request against.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>

#include "ucs/status/status.h"

namespace mc::uct::sm {

struct Region {
  uintptr_t base = 0;
  size_t length = 0;
  unsigned access = 0;  ///< MemAccess bits
};

/// Thread-safe. Shared by every sm memory domain of the process, since a
/// peer's request reaches whichever sm iface its endpoint connected to.
class RegionTable {
 public:
  static RegionTable& instance();

  /// Adds a registration; returns its id (never 0, never reused).
  uint64_t add(const Region& region);
  void remove(uint64_t id);

  /// Calls `fn(address)` with the table locked (so the registration cannot
  /// go away during the copy) when [addr, addr + len) lies inside
  /// registration `id` and that allows `access`. Rejected otherwise, with
  /// the reason in `why`.
  ucs::Status with_range(uint64_t id, uint64_t addr, size_t len, unsigned access,
                         const std::function<void(uint8_t*)>& fn, const char** why);

 private:
  std::mutex lock_;  // guards regions_ and next_id_
  std::map<uint64_t, Region> regions_;
  uint64_t next_id_ = 1;
};

}  // namespace mc::uct::sm
