// SPDX-License-Identifier: Apache-2.0
// sm memory domain: registers host memory for CMA, allocates shm-backed
// memory that peers map, packs and unpacks rkeys, opens sm ifaces.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "uct/api/md.h"
#include "uct/sm/sm_config.h"
#include "uct/sm/sm_rkey.h"
#include "uct/sm/sm_shm.h"

namespace mc::uct::sm {

/// A registration, or an allocation when it owns a segment. Destroying it
/// removes the registration (and unmaps and unlinks the segment; peers that
/// mapped it keep their view until they drop their rkeys).
class SmMemHandle : public MemHandle {
 public:
  SmMemHandle(void* address, size_t length, unsigned access, uint64_t reg_id,
              std::unique_ptr<ShmSegment> segment);
  ~SmMemHandle() override;

  uint64_t reg_id() const { return reg_id_; }
  const ShmSegment* segment() const { return segment_.get(); }

 private:
  uint64_t reg_id_;
  std::unique_ptr<ShmSegment> segment_;
};

class SmMd : public MemoryDomain {
 public:
  explicit SmMd(SmConfig config) : config_(config) {}

  const std::string& name() const override { return name_; }
  MdAttr query() const override;
  std::vector<TlResource> query_tl_resources() const override;
  Result<std::unique_ptr<Iface>> iface_open(const IfaceParams& params) override;
  Result<std::unique_ptr<MemHandle>> mem_reg(void* address, size_t length,
                                             unsigned access) override;
  Result<std::unique_ptr<MemHandle>> mem_alloc(size_t length, MemType type,
                                               unsigned access) override;
  Status mkey_pack(const MemHandle& memh, std::vector<uint8_t>* out) const override;
  Result<std::unique_ptr<Rkey>> rkey_unpack(std::span<const uint8_t> packed) const override;

  const SmConfig& config() const { return config_; }

 private:
  /// The mapping of a peer's memory segment, shared by every rkey of it.
  Result<std::shared_ptr<ShmSegment>> map_segment(const RkeyInfo& info) const;

  const std::string name_ = "sm";
  SmConfig config_;
  mutable std::mutex lock_;  // guards mappings_
  mutable std::map<std::string, std::weak_ptr<ShmSegment>> mappings_;
};

}  // namespace mc::uct::sm
