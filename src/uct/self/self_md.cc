// SPDX-License-Identifier: Apache-2.0
// self memory domain.
#include "uct/self/self_md.h"

#include "ucs/datastruct/wire.h"
#include "ucs/log/log.h"
#include "uct/base/rkey_codec.h"
#include "uct/self/self_iface.h"

namespace mc::uct::self {

namespace {

class SelfMemHandle : public MemHandle {
 public:
  SelfMemHandle(SelfMd* md, uint64_t id, void* address, size_t length, unsigned access)
      : MemHandle(address, length, access, MemType::Host), md_(md), id_(id) {}
  ~SelfMemHandle() override { md_->forget(id_); }
  uint64_t id() const { return id_; }

 private:
  SelfMd* md_;
  uint64_t id_;
};

constexpr size_t kRkeyPayload = 8 + 8 + 8 + 4;  // id, base, length, access

}  // namespace

SelfMd::SelfMd(SelfConfig config) : config_(config) {}

MdAttr SelfMd::query() const {
  MdAttr attr;
  attr.flags = kMdReg | kMdNeedRkey;
  attr.reg_mem_types = mem_type_bit(MemType::Host);
  attr.access_mem_types = mem_type_bit(MemType::Host);
  attr.detect_mem_types = 0;
  attr.reg_cost = LinearFunc{50e-9, 0};  // a map insert under a lock
  attr.rkey_packed_size = rkey_envelope_size(name_) + kRkeyPayload;
  return attr;
}

std::vector<TlResource> SelfMd::query_tl_resources() const {
  return {TlResource{"self", "memory", DeviceType::Self, -1}};
}

Result<std::unique_ptr<Iface>> SelfMd::iface_open(const IfaceParams& params) {
  if (params.dev_name != "memory") {
    MC_LOG(error) << "self transport has no device '" << params.dev_name << "' (only 'memory')";
    return Status::NoDevice;
  }
  return std::unique_ptr<Iface>(new SelfIface(this, config_));
}

Result<std::unique_ptr<MemHandle>> SelfMd::mem_reg(void* address, size_t length,
                                                   unsigned access) {
  if (!address || length == 0) {
    MC_LOG(error) << "self: cannot register " << length << " bytes at " << address;
    return Status::InvalidParam;
  }
  std::lock_guard guard(lock_);
  const uint64_t id = next_id_++;
  regions_[id] = SelfRegion{reinterpret_cast<uintptr_t>(address), length, access};
  return std::unique_ptr<MemHandle>(new SelfMemHandle(this, id, address, length, access));
}

void SelfMd::forget(uint64_t id) {
  std::lock_guard guard(lock_);
  regions_.erase(id);
}

// Payload: u64 id | u64 base | u64 length | u32 access  (little-endian)
Status SelfMd::mkey_pack(const MemHandle& memh, std::vector<uint8_t>* out) const {
  const auto* h = dynamic_cast<const SelfMemHandle*>(&memh);
  if (!h) {
    MC_LOG(error) << "self: mkey_pack of a handle from another memory domain";
    return Status::InvalidParam;
  }
  std::vector<uint8_t> payload;
  ucs::WireWriter w(&payload);
  w.u64(h->id());
  w.u64(reinterpret_cast<uintptr_t>(h->address()));
  w.u64(h->length());
  w.u32(h->access());
  rkey_pack_envelope(name_, payload, out);
  return Status::Ok;
}

Result<std::unique_ptr<Rkey>> SelfMd::rkey_unpack(std::span<const uint8_t> packed) const {
  MC_ASSIGN_OR_RETURN(std::span<const uint8_t> payload, rkey_unpack_envelope(name_, packed));
  ucs::WireReader r(payload);
  const uint64_t id = r.u64();
  SelfRegion region{r.u64(), r.u64(), r.u32()};
  if (!r.at_end() || region.length == 0 || region.base + region.length < region.base) {
    MC_LOG(error) << "self: malformed rkey payload (" << payload.size() << " bytes)";
    return Status::InvalidParam;
  }
  return std::unique_ptr<Rkey>(new SelfRkey(id, region));
}

Status SelfMd::check_access(const SelfRkey& rkey, uint64_t addr, size_t len,
                            unsigned access) const {
  std::lock_guard guard(lock_);
  auto it = regions_.find(rkey.id);
  const bool live = it != regions_.end() && it->second.base == rkey.region.base &&
                    it->second.length == rkey.region.length;
  if (!live) {
    MC_LOG(error) << "self: access with rkey " << rkey.id << " to a region that is not registered";
    return Status::InvalidParam;
  }
  const SelfRegion& r = it->second;
  if ((r.access & access) != access) {
    MC_LOG(error) << "self: region " << rkey.id << " does not allow remote "
                  << (access & kAccessRemoteWrite ? "write" : "read");
    return Status::InvalidParam;
  }
  if (addr < r.base || len > r.length || addr - r.base > r.length - len) {
    MC_LOG(error) << "self: access [0x" << std::hex << addr << ", +" << std::dec << len
                  << ") is outside registered region [0x" << std::hex << r.base << ", +"
                  << std::dec << r.length << ")";
    return Status::InvalidParam;
  }
  return Status::Ok;
}

}  // namespace mc::uct::self
