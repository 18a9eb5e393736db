// SPDX-License-Identifier: Apache-2.0
// StagingPool: registered host bounce buffers of one size for the staging
// protocol, shared by a worker's staged requests.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "ucp/api/mem_handle.h"

namespace mc::ucp {
class Context;
}

namespace mc::ucp::proto {

/// `count` buffers of `frag_size` bytes in one page-aligned allocation,
/// registered once with every memory domain of the context that registers
/// host memory (the memory-type transport's md pins it, the network mds
/// make it a zero-copy source and destination). Not thread-safe: used under
/// its worker's lock. Must not outlive its context.
class StagingPool {
 public:
  /// NoMemory when the allocation fails; the error of MemHandle::map.
  static ucs::Result<std::shared_ptr<StagingPool>> create(Context& context, size_t frag_size,
                                                          size_t count);
  ~StagingPool();
  StagingPool(const StagingPool&) = delete;
  StagingPool& operator=(const StagingPool&) = delete;

  /// A free buffer of frag_size() bytes, or null when all are taken.
  void* get();
  /// Gives back a buffer from get().
  void put(void* buffer);
  size_t frag_size() const { return frag_size_; }
  /// The registration covering every buffer.
  const MemHandle& memh() const { return *memh_; }

 private:
  StagingPool(void* base, size_t frag_size, size_t count);

  void* base_;
  size_t frag_size_;
  std::unique_ptr<MemHandle> memh_;  ///< released before base_ is freed
  std::vector<void*> free_;
};

}  // namespace mc::ucp::proto
