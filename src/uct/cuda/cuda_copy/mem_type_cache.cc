// SPDX-License-Identifier: Apache-2.0
// Memory-type range cache.
#include "uct/cuda/cuda_copy/mem_type_cache.h"

namespace mc::uct::cuda {

void MemTypeCache::erase_overlapping(uintptr_t base, uintptr_t end) {
  auto it = ranges_.upper_bound(base);
  if (it != ranges_.begin() && std::prev(it)->second.end > base) --it;
  while (it != ranges_.end() && it->first < end) it = ranges_.erase(it);
}

void MemTypeCache::insert(uintptr_t base, size_t length, MemTypeInfo info) {
  if (length == 0 || base + length < base) return;
  std::lock_guard guard(lock_);
  erase_overlapping(base, base + length);
  ranges_.emplace(base, Entry{base + length, info});
}

std::optional<MemTypeInfo> MemTypeCache::lookup(uintptr_t addr, size_t length) const {
  std::lock_guard guard(lock_);
  auto it = ranges_.upper_bound(addr);
  if (it != ranges_.begin()) {
    --it;
    const uintptr_t end = it->second.end;
    if (addr < end && length <= end - addr) {
      ++hits_;
      return it->second.info;
    }
  }
  ++misses_;
  return std::nullopt;
}

void MemTypeCache::erase(uintptr_t base, size_t length) {
  if (length == 0) return;
  std::lock_guard guard(lock_);
  const uintptr_t end = base + length < base ? UINTPTR_MAX : base + length;
  erase_overlapping(base, end);
}

size_t MemTypeCache::size() const {
  std::lock_guard guard(lock_);
  return ranges_.size();
}

uint64_t MemTypeCache::hits() const {
  std::lock_guard guard(lock_);
  return hits_;
}

uint64_t MemTypeCache::misses() const {
  std::lock_guard guard(lock_);
  return misses_;
}

}  // namespace mc::uct::cuda
