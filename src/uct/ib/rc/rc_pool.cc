// SPDX-License-Identifier: Apache-2.0
// Registered buffer pool.
#include "uct/ib/rc/rc_pool.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "ucs/log/log.h"

namespace mc::uct::ib::rc {

ucs::Result<std::unique_ptr<BufPool>> BufPool::create(IbDevice* dev, size_t size, size_t max,
                                                      const char* name) {
  std::unique_ptr<BufPool> p(new BufPool(dev, size, max));
  ucs::MpoolParams params;
  params.elem_size = size;
  params.alignment = 64;
  params.elems_per_chunk = std::min<size_t>(max, 128);
  params.max_elems = max;
  params.name = name;
  BufPool* self = p.get();
  ucs::ChunkOps ops;
  ops.alloc = [self](size_t bytes) -> ucs::Result<void*> {
    void* mem = std::aligned_alloc(4096, (bytes + 4095) & ~size_t{4095});
    if (!mem) return ucs::Status::NoMemory;
    ibv_mr* mr = self->dev_->ops().reg_mr(self->dev_->pd(), mem, bytes, IBV_ACCESS_LOCAL_WRITE);
    if (!mr) {
      MC_LOG(error) << "rc: ibv_reg_mr of a " << bytes << "-byte buffer chunk on "
                    << self->dev_->name() << ": " << std::strerror(errno);
      std::free(mem);
      return ucs::Status::IoError;
    }
    self->chunks_[reinterpret_cast<uintptr_t>(mem)] = mr;
    return mem;
  };
  ops.release = [self](void* mem, size_t) {
    auto it = self->chunks_.find(reinterpret_cast<uintptr_t>(mem));
    if (it != self->chunks_.end()) {
      self->dev_->ops().dereg_mr(it->second);
      self->chunks_.erase(it);
    }
    std::free(mem);
  };
  MC_ASSIGN_OR_RETURN(p->pool_, ucs::Mpool::create(params, std::move(ops)));
  return p;
}

BufPool::~BufPool() {
  pool_.reset();
}

uint32_t BufPool::lkey(const void* buf) const {
  auto it = chunks_.upper_bound(reinterpret_cast<uintptr_t>(buf));
  return it == chunks_.begin() ? 0 : std::prev(it)->second->lkey;
}

}  // namespace mc::uct::ib::rc
