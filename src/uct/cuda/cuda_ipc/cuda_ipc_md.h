// SPDX-License-Identifier: Apache-2.0
// cuda_ipc memory domain. The owner's side: registering GPU memory exports
// its allocation (a legacy IPC handle for cuMemAlloc memory; a POSIX fd, or
// a fabric handle, for VMM allocations) and packs it into the rkey; the
// IpcServer answers peers. The peer's side: unpacking an rkey asks the
// owner, then maps the allocation once (IpcMappingCache); the owner's
// notices, read by poll(), invalidate mappings.
#pragma once

#include <array>
#include <memory>
#include <string>
#include <vector>

#include "uct/api/md.h"
#include "uct/cuda/base/cu_driver.h"
#include "uct/cuda/base/nvml.h"
#include "uct/cuda/cuda_ipc/cuda_ipc_cache.h"
#include "uct/cuda/cuda_ipc/cuda_ipc_channel.h"
#include "uct/cuda/cuda_ipc/cuda_ipc_config.h"
#include "uct/cuda/cuda_ipc/cuda_ipc_key.h"

namespace mc::uct::cuda {

/// An unpacked cuda_ipc rkey: the key, and the mapping of its allocation in
/// this process (null for an rkey of this process's own memory).
class CudaIpcRkey : public Rkey {
 public:
  CudaIpcRkey(CudaIpcKey key, std::shared_ptr<IpcMapping> mapping)
      : key(std::move(key)), mapping(std::move(mapping)) {}
  CudaIpcKey key;
  std::shared_ptr<IpcMapping> mapping;
};

/// A GPU of this process as peers see it.
struct IpcDevice {
  int ordinal;
  std::array<uint8_t, 16> uuid;
};

class CudaIpcMd : public MemoryDomain {
 public:
  static Result<std::unique_ptr<CudaIpcMd>> create(const CuDriver* driver,
                                                   const CudaIpcConfig& config);

  const std::string& name() const override { return name_; }
  MdAttr query() const override;
  std::vector<TlResource> query_tl_resources() const override;
  Result<std::unique_ptr<Iface>> iface_open(const IfaceParams& params) override;
  Result<std::unique_ptr<MemHandle>> mem_reg(void* address, size_t length,
                                             unsigned access) override;
  Status mkey_pack(const MemHandle& memh, std::vector<uint8_t>* out) const override;
  Result<std::unique_ptr<Rkey>> rkey_unpack(std::span<const uint8_t> packed) const override;

  /// Reads the owners' notices and invalidates their mappings; the number read.
  unsigned poll();

  /// The local device that maps a peer's allocation on GPU `uuid`: that GPU,
  /// when this process sees it (copies from another local GPU then go by
  /// peer access, the driver enabling it); else -1 with `*why`.
  int device_for(const std::array<uint8_t, 16>& uuid, std::string* why) const;
  /// Whether GPU `uuid` is one this process sees.
  bool reaches(const std::array<uint8_t, 16>& uuid) const;

  const std::vector<IpcDevice>& devices() const { return devices_; }
  const CuDriver& driver() const { return *driver_; }
  const CudaIpcConfig& config() const { return config_; }
  const IpcMappingCache& cache() const { return cache_; }
  /// Empty when fabric handles can be exported; else exactly why not.
  const std::string& fabric_unavailable() const { return fabric_why_; }
  /// The NVLink fabric of this process's GPUs (valid when fabric handles are available).
  const GpuFabric& fabric() const { return fabric_; }
  IpcServer& server() const { return *server_; }

 private:
  CudaIpcMd(const CuDriver* driver, const CudaIpcConfig& config)
      : driver_(driver), config_(config), cache_(config.cache_size) {}
  Result<std::shared_ptr<IpcMapping>> open_mapping(const CudaIpcKey& key) const;
  /// Exports the allocation at `base` on device `ordinal` into `*key`
  /// (kind, handle) and `*fd` (PosixFd); logged errors.
  Status export_allocation(uintptr_t base, int ordinal, CudaIpcKey* key, int* fd) const;

  const std::string name_ = "cuda_ipc";
  const CuDriver* driver_;
  CudaIpcConfig config_;
  std::vector<IpcDevice> devices_;
  std::string fabric_why_;
  GpuFabric fabric_;
  std::unique_ptr<IpcServer> server_;
  mutable IpcClient client_;
  mutable IpcMappingCache cache_;
};

}  // namespace mc::uct::cuda
