// SPDX-License-Identifier: Apache-2.0
// RemoteRegions: a context's remote-accessible registrations of memory other
// than host memory, against which a peer's remote staging request is checked.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>

#include "uct/api/types.h"

namespace mc::ucp {

/// Filled by MemHandle (a registration of non-host memory that allows
/// remote access joins it while it lives); read by the worker that serves a
/// peer's remote staging request: a peer touches only memory registered as
/// remote-accessible, within its bounds. Thread-safe (any worker, any
/// registration).
class RemoteRegions {
 public:
  /// Adds [base, +length) of `mem` memory; the id for remove().
  uint64_t add(uint64_t base, uint64_t length, uct::MemType mem);
  /// Removes what add() returned `id` for.
  void remove(uint64_t id);
  /// The memory type of a region that holds [addr, +length) whole;
  /// nullopt when none does (or length is 0, or the range wraps).
  std::optional<uct::MemType> find(uint64_t addr, uint64_t length) const;

 private:
  struct Region {
    uint64_t base;
    uint64_t length;
    uct::MemType mem;
  };
  mutable std::mutex mu_;  ///< guards regions_ and next_id_
  std::map<uint64_t, Region> regions_;
  uint64_t next_id_ = 1;
};

}  // namespace mc::ucp
