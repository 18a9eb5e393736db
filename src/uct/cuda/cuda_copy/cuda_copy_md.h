// SPDX-License-Identifier: Apache-2.0
// cuda_copy memory domain: memory-type detection (cuPointerGetAttribute,
// cached per registered range), host memory pinned on registration, rkeys
// for copies inside this process.
#pragma once

#include <map>
#include <mutex>
#include <string>

#include "uct/api/md.h"
#include "uct/cuda/base/cu_driver.h"
#include "uct/cuda/cuda_copy/cuda_copy_config.h"
#include "uct/cuda/cuda_copy/mem_type_cache.h"

namespace mc::uct::cuda {

/// A registered range: [base, base + length), its access and type.
struct CudaRegion {
  uintptr_t base;
  size_t length;
  unsigned access;
  MemTypeInfo info;
};

/// An unpacked cuda_copy rkey (this process only).
class CudaCopyRkey : public Rkey {
 public:
  CudaCopyRkey(uint64_t id, CudaRegion region) : id(id), region(region) {}
  uint64_t id;
  CudaRegion region;
};

class CudaCopyMd : public MemoryDomain {
 public:
  CudaCopyMd(const CuDriver* driver, CudaCopyConfig config) : driver_(driver), config_(config) {}

  const std::string& name() const override { return name_; }
  MdAttr query() const override;
  std::vector<TlResource> query_tl_resources() const override;
  Result<std::unique_ptr<Iface>> iface_open(const IfaceParams& params) override;
  Result<std::unique_ptr<MemHandle>> mem_reg(void* address, size_t length,
                                             unsigned access) override;
  Status mkey_pack(const MemHandle& memh, std::vector<uint8_t>* out) const override;
  Result<std::unique_ptr<Rkey>> rkey_unpack(std::span<const uint8_t> packed) const override;
  MemType detect_mem_type(const void* address, size_t length) const override;

  /// Type and owning device of a range: from the cache of registered ranges,
  /// else from the driver (not cached: unregistered memory may be freed).
  MemTypeInfo detect(const void* address, size_t length) const;

  /// InvalidParam (logged) unless [addr, addr + len) lies inside a live
  /// registration of `rkey` that allows `access`.
  Status check_access(const CudaCopyRkey& rkey, uint64_t addr, size_t len, unsigned access) const;

  /// Called by a handle's destructor: drops the registration and its cache entry.
  void forget(uint64_t id, uintptr_t base, size_t length);

  const MemTypeCache& cache() const { return cache_; }
  const CudaCopyConfig& config() const { return config_; }
  const CuDriver& driver() const { return *driver_; }

 private:
  const std::string name_ = "cuda_copy";
  const CuDriver* driver_;
  CudaCopyConfig config_;
  MemTypeCache cache_;
  mutable std::mutex lock_;  // guards regions_ and next_id_
  std::map<uint64_t, CudaRegion> regions_;
  uint64_t next_id_ = 1;
};

}  // namespace mc::uct::cuda
