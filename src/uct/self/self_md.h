// SPDX-License-Identifier: Apache-2.0
// self memory domain: registrations in this process, checked on every access.
#pragma once

#include <map>
#include <mutex>

#include "uct/api/md.h"
#include "uct/self/self_config.h"

namespace mc::uct::self {

/// A registered range and what peers may do with it.
struct SelfRegion {
  uintptr_t base;
  size_t length;
  unsigned access;
};

/// An unpacked self rkey: the registration id and its range.
class SelfRkey : public Rkey {
 public:
  SelfRkey(uint64_t id, SelfRegion region) : id(id), region(region) {}
  uint64_t id;
  SelfRegion region;
};

class SelfMd : public MemoryDomain {
 public:
  explicit SelfMd(SelfConfig config);

  const std::string& name() const override { return name_; }
  MdAttr query() const override;
  std::vector<TlResource> query_tl_resources() const override;
  Result<std::unique_ptr<Iface>> iface_open(const IfaceParams& params) override;
  Result<std::unique_ptr<MemHandle>> mem_reg(void* address, size_t length,
                                             unsigned access) override;
  Status mkey_pack(const MemHandle& memh, std::vector<uint8_t>* out) const override;
  Result<std::unique_ptr<Rkey>> rkey_unpack(std::span<const uint8_t> packed) const override;

  /// InvalidParam (logged) unless [addr, addr + len) lies inside a live
  /// registration of `rkey` that allows `access`.
  Status check_access(const SelfRkey& rkey, uint64_t addr, size_t len, unsigned access) const;

  /// Called by a handle's destructor.
  void forget(uint64_t id);

 private:
  const std::string name_ = "self";
  SelfConfig config_;
  mutable std::mutex lock_;  // guards regions_ and next_id_
  std::map<uint64_t, SelfRegion> regions_;
  uint64_t next_id_ = 1;
};

}  // namespace mc::uct::self
