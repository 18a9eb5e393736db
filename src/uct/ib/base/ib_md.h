// SPDX-License-Identifier: Apache-2.0
// The memory domain shared by the verbs transports: every allowed device
// with its protection domain; a registration covers all of them (one MR
// per device) and its packed rkey carries one key per device, so a peer
// uses the key of the device its queue pair reaches.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "uct/api/md.h"
#include "uct/ib/base/ib_device.h"
#include "uct/ib/base/ib_gpu_reg.h"

namespace mc::uct::ib {

/// One registration of a range on every device; deregistered when the last
/// handle using it goes.
struct IbRegion {
  ~IbRegion();
  uintptr_t start = 0;
  size_t length = 0;
  int access = 0;                    ///< ibv_access_flags
  MemType mem_type = MemType::Host;  ///< Host, or Cuda (registered by the GPU path)
  std::vector<ibv_mr*> mrs;          ///< per device, in IbMd::devices() order
  const VerbsOps* ops = nullptr;
};

class IbMemHandle : public MemHandle {
 public:
  IbMemHandle(void* address, size_t length, unsigned access, std::shared_ptr<IbRegion> region)
      : MemHandle(address, length, access, region->mem_type), region_(std::move(region)) {}
  uint32_t lkey(size_t dev) const { return region_->mrs[dev]->lkey; }
  const IbRegion& region() const { return *region_; }

 private:
  std::shared_ptr<IbRegion> region_;
};

/// An unpacked rkey: (device GUID, rkey) per device of the owner.
class IbRkey : public Rkey {
 public:
  std::vector<std::pair<uint64_t, uint32_t>> keys;
  /// The rkey for the device with `guid`; NoElem when the owner has none.
  Result<uint32_t> for_device(uint64_t guid) const;
};

class IbMd : public MemoryDomain {
 public:
  /// Opens every device `config` allows (none is not an error: the md then
  /// offers no resources and no_device_reason() says why); with `need_mlx5`
  /// only those the provider drives through mlx5 direct verbs.
  IbMd(std::string name, const VerbsOps* ops, const IbConfig& config, std::string why,
       bool need_mlx5 = false);

  const std::string& name() const override { return name_; }
  MdAttr query() const override;
  std::vector<TlResource> query_tl_resources() const override;
  /// Registers host memory, and CUDA device memory through the path
  /// gpu_reg() chose (Unsupported, naming why, when there is none).
  Result<std::unique_ptr<MemHandle>> mem_reg(void* address, size_t length,
                                             unsigned access) override;
  /// Registers the buffers on up to MC_IB_REG_THREADS threads (pinning,
  /// not the md, is the cost: the cache lock is not held across ibv_reg_mr).
  std::vector<Result<std::unique_ptr<MemHandle>>> mem_reg_batch(
      std::span<const MemRegRequest> reqs) override;
  Status mkey_pack(const MemHandle& memh, std::vector<uint8_t>* out) const override;
  Result<std::unique_ptr<Rkey>> rkey_unpack(std::span<const uint8_t> packed) const override;

  /// The transport name offered on each device ("rc_verbs").
  virtual const char* tl_name() const = 0;

  const std::vector<std::unique_ptr<IbDevice>>& devices() const { return devices_; }
  /// Index of the device whose tl_dev_name() is `dev_name`; -1 when none.
  int find_device(const std::string& dev_name) const;
  const IbConfig& ib_config() const { return config_; }
  const VerbsOps* ops() const { return ops_; }
  const std::string& no_device_reason() const { return why_; }
  const IbGpuReg& gpu_reg() const { return gpu_; }
  /// Whether host memory is registered with PCIe relaxed ordering
  /// (MC_IB_PCI_RELAXED_ORDERING and a provider with ibv_reg_mr_iova2).
  bool relaxed_ordering() const { return relaxed_; }
  /// The mc_info -d note on relaxed ordering: on, off, or why not.
  std::string describe_relaxed_ordering() const;

 private:
  std::shared_ptr<IbRegion> region_get(uintptr_t start, size_t length, int access, MemType type);
  Result<std::shared_ptr<IbRegion>> region_reg(uintptr_t start, size_t length, int access,
                                               MemType type);
  /// The dma-buf of a GPU range to register; nullopt (with Ok) when the
  /// range goes through ibv_reg_mr instead (peer memory).
  Result<std::optional<DmaBuf>> gpu_dmabuf(uintptr_t start, size_t length);

  std::string name_;
  const VerbsOps* ops_;
  IbConfig config_;
  std::string why_;
  std::vector<std::unique_ptr<IbDevice>> devices_;
  IbGpuReg gpu_;
  bool relaxed_ = false;
  // The registration cache: live regions by start address; `lock_` guards
  // it and is never held across a registration call. It never hooks
  // malloc, so it only shares a region while some handle holds it: a
  // region outlives no handle, and stale translations cannot arise. That
  // holds for GPU ranges as well (cudaFree of a registered range is the
  // caller's error, as free() of a host one); a region is shared only with
  // a registration of the same memory type.
  mutable std::mutex lock_;
  std::multimap<uintptr_t, std::weak_ptr<IbRegion>> regions_;
};

/// Opens the provider `config` selects: the libibverbs table or the soft one.
/// NoDevice with `why` when it cannot be used.
Result<const VerbsOps*> verbs_ops_for(const IbConfig& config, std::string* why);

}  // namespace mc::uct::ib
