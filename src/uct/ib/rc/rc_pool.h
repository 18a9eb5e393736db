// SPDX-License-Identifier: Apache-2.0
// Registered buffers of one size for an iface (bounce and receive buffers):
// an mpool whose chunks are registered with the device's protection domain.
#pragma once

#include <map>
#include <memory>

#include "ucs/mpool/mpool.h"
#include "uct/ib/base/ib_device.h"

namespace mc::uct::ib::rc {

class BufPool {
 public:
  /// A pool of up to `max` buffers of `size` bytes on `dev`.
  static ucs::Result<std::unique_ptr<BufPool>> create(IbDevice* dev, size_t size, size_t max,
                                                      const char* name);
  ~BufPool();

  /// A buffer, or null when the pool is exhausted.
  void* get() { return pool_->get(); }
  void put(void* buf) { pool_->put(buf); }
  /// Buffers still obtainable before get() fails.
  size_t available() const { return max_ - pool_->in_use(); }
  /// The lkey of the chunk holding `buf`.
  uint32_t lkey(const void* buf) const;
  size_t size() const { return size_; }

 private:
  BufPool(IbDevice* dev, size_t size, size_t max) : dev_(dev), size_(size), max_(max) {}

  IbDevice* dev_;
  size_t size_;
  size_t max_;
  std::map<uintptr_t, ibv_mr*> chunks_;  // by start address
  std::unique_ptr<ucs::Mpool> pool_;
};

}  // namespace mc::uct::ib::rc
