// SPDX-License-Identifier: Apache-2.0
// vendor memory domain: registrations of this process, their packed keys,
// and the bounds/access check a target runs before touching its memory.
#pragma once

#include <ucs/config/table.h>
#include <uct/api/md.h>

#include <map>
#include <mutex>

namespace vendor {

using mc::ucs::Result;
using mc::ucs::Status;

/// The knobs of the vendor transport (MC_VENDOR_*).
struct VendorConfig {
  size_t seg_size;      ///< largest short/bcopy message and bcopy put/get
  size_t tx_queue_max;  ///< bytes queued on one connection before NoResource
};

const mc::ucs::config::Table& vendor_config_table();

/// A registered range and what peers may do with it.
struct VendorRegion {
  uint64_t base = 0;
  uint64_t length = 0;
  uint32_t access = 0;
};

/// An unpacked vendor rkey: the registration id and its range.
class VendorRkey : public mc::uct::Rkey {
 public:
  VendorRkey(uint64_t id, VendorRegion region) : id(id), region(region) {}
  uint64_t id;
  VendorRegion region;
};

class VendorMd : public mc::uct::MemoryDomain {
 public:
  explicit VendorMd(VendorConfig config) : config_(config) {}

  const std::string& name() const override { return name_; }
  mc::uct::MdAttr query() const override;
  std::vector<mc::uct::TlResource> query_tl_resources() const override;
  Result<std::unique_ptr<mc::uct::Iface>> iface_open(const mc::uct::IfaceParams& params) override;
  Result<std::unique_ptr<mc::uct::MemHandle>> mem_reg(void* address, size_t length,
                                                      unsigned access) override;
  Status mkey_pack(const mc::uct::MemHandle& memh, std::vector<uint8_t>* out) const override;
  Result<std::unique_ptr<mc::uct::Rkey>> rkey_unpack(
      std::span<const uint8_t> packed) const override;

  /// Target side: Ok when [addr, addr + len) lies in live registration `id`
  /// that allows `access`; InvalidParam (logged) otherwise.
  Status check_access(uint64_t id, uint64_t addr, uint64_t len, unsigned access) const;

  /// Called by a handle's destructor.
  void forget(uint64_t id);

 private:
  const std::string name_ = "vendor";
  VendorConfig config_;
  mutable std::mutex lock_;  // guards regions_ and next_id_
  std::map<uint64_t, VendorRegion> regions_;
  uint64_t next_id_ = 1;
};

/// Whether [addr, addr + len) lies inside `r`, without overflow.
inline bool region_contains(const VendorRegion& r, uint64_t addr, uint64_t len) {
  return addr >= r.base && len <= r.length && addr - r.base <= r.length - len;
}

}  // namespace vendor
