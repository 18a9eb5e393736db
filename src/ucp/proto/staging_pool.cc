// SPDX-License-Identifier: Apache-2.0
// StagingPool: one registered allocation cut into bounce buffers.
#include "ucp/proto/staging_pool.h"

#include <cstdlib>

#include "ucs/log/log.h"

namespace mc::ucp::proto {

ucs::Result<std::shared_ptr<StagingPool>> StagingPool::create(Context& context, size_t frag_size,
                                                              size_t count) {
  constexpr size_t kAlign = 4096;
  const size_t frag = (frag_size + kAlign - 1) / kAlign * kAlign;
  void* base = nullptr;
  if (count == 0 || frag == 0 || posix_memalign(&base, kAlign, frag * count) != 0) {
    MC_LOG(error) << "ucp: cannot allocate " << count << " staging buffers of " << frag << " bytes";
    return ucs::Status::NoMemory;
  }
  std::shared_ptr<StagingPool> pool(new StagingPool(base, frag_size, count));
  for (size_t i = count; i > 0; --i)
    pool->free_.push_back(static_cast<uint8_t*>(base) + (i - 1) * frag);
  MC_ASSIGN_OR_RETURN(pool->memh_, MemHandle::map(context, base, frag * count, uct::kAccessAll));
  return pool;
}

StagingPool::StagingPool(void* base, size_t frag_size, size_t count)
    : base_(base), frag_size_(frag_size) {
  free_.reserve(count);
}

StagingPool::~StagingPool() {
  memh_.reset();
  free(base_);
}

void* StagingPool::get() {
  if (free_.empty()) return nullptr;
  void* b = free_.back();
  free_.pop_back();
  return b;
}

void StagingPool::put(void* buffer) {
  free_.push_back(buffer);
}

}  // namespace mc::ucp::proto
