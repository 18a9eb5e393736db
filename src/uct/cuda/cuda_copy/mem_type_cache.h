// SPDX-License-Identifier: Apache-2.0
// A range cache of memory types: registered ranges and what they are, so the
// data path does not ask the CUDA driver for every transfer. Pure logic, no
// CUDA: tested on machines without a GPU.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>

#include "uct/api/types.h"

namespace mc::uct::cuda {

/// What a range of memory is.
struct MemTypeInfo {
  MemType type = MemType::Unknown;
  int device = -1;  ///< owning CUDA device, -1 for host memory
  bool operator==(const MemTypeInfo&) const = default;
};

/// Thread-safe. Ranges never overlap: inserting one drops those it overlaps.
class MemTypeCache {
 public:
  /// Records [base, base + length); a zero length or a wrapping range is ignored.
  void insert(uintptr_t base, size_t length, MemTypeInfo info);
  /// The info of the one range that holds all of [addr, addr + length), if any.
  std::optional<MemTypeInfo> lookup(uintptr_t addr, size_t length) const;
  /// Drops every range that overlaps [base, base + length) (unregistration).
  void erase(uintptr_t base, size_t length);

  size_t size() const;
  uint64_t hits() const;
  uint64_t misses() const;

 private:
  struct Entry {
    uintptr_t end;  // one past the last byte
    MemTypeInfo info;
  };
  void erase_overlapping(uintptr_t base, uintptr_t end);

  mutable std::mutex lock_;            // guards everything below
  std::map<uintptr_t, Entry> ranges_;  // by start
  mutable uint64_t hits_ = 0;
  mutable uint64_t misses_ = 0;
};

}  // namespace mc::uct::cuda
