// SPDX-License-Identifier: Apache-2.0
// vendor memory domain.
#include "vendor_md.h"

#include <ucs/datastruct/wire.h>
#include <ucs/log/log.h>
#include <uct/base/rkey_codec.h>

#include "vendor_iface.h"

namespace vendor {

namespace {

class VendorMemHandle : public mc::uct::MemHandle {
 public:
  VendorMemHandle(VendorMd* md, uint64_t id, void* address, size_t length, unsigned access)
      : MemHandle(address, length, access, mc::uct::MemType::Host), md_(md), id_(id) {}
  ~VendorMemHandle() override { md_->forget(id_); }
  uint64_t id() const { return id_; }

 private:
  VendorMd* md_;
  uint64_t id_;
};

constexpr size_t kRkeyPayload = 8 + 8 + 8 + 4;  // id, base, length, access

}  // namespace

const mc::ucs::config::Table& vendor_config_table() {
  namespace cfg = mc::ucs::config;
  static const cfg::Table table(
      "vendor transport", "VENDOR_",
      {cfg::field("SEG_SIZE", "8k", "Largest active message, and largest put or get by bcopy.",
                  &VendorConfig::seg_size, cfg::size_parser(64, 1 << 30)),
       cfg::field("TX_QUEUE_MAX", "4m",
                  "Bytes queued on one connection before operations return NoResource.",
                  &VendorConfig::tx_queue_max, cfg::size_parser(4096))});
  return table;
}

mc::uct::MdAttr VendorMd::query() const {
  mc::uct::MdAttr attr;
  attr.flags = mc::uct::kMdReg | mc::uct::kMdNeedRkey;
  attr.reg_mem_types = mc::uct::mem_type_bit(mc::uct::MemType::Host);
  attr.access_mem_types = mc::uct::mem_type_bit(mc::uct::MemType::Host);
  attr.reg_cost = mc::uct::LinearFunc{50e-9, 0};  // a map insert under a lock
  attr.rkey_packed_size = mc::uct::rkey_envelope_size(name_) + kRkeyPayload;
  return attr;
}

std::vector<mc::uct::TlResource> VendorMd::query_tl_resources() const {
  return {mc::uct::TlResource{"vendor", "unix", mc::uct::DeviceType::Shm, -1}};
}

Result<std::unique_ptr<mc::uct::Iface>> VendorMd::iface_open(const mc::uct::IfaceParams& params) {
  if (params.dev_name != "unix") {
    MC_LOG(error) << "vendor transport has no device '" << params.dev_name << "' (only 'unix')";
    return Status::NoDevice;
  }
  return VendorIface::create(this, config_, params.err_handler);
}

Result<std::unique_ptr<mc::uct::MemHandle>> VendorMd::mem_reg(void* address, size_t length,
                                                              unsigned access) {
  if (!address || length == 0) {
    MC_LOG(error) << "vendor: cannot register " << length << " bytes at " << address;
    return Status::InvalidParam;
  }
  std::lock_guard guard(lock_);
  const uint64_t id = next_id_++;
  regions_[id] = VendorRegion{reinterpret_cast<uintptr_t>(address), length, access};
  return std::unique_ptr<mc::uct::MemHandle>(
      new VendorMemHandle(this, id, address, length, access));
}

void VendorMd::forget(uint64_t id) {
  std::lock_guard guard(lock_);
  regions_.erase(id);
}

// Payload: u64 id | u64 base | u64 length | u32 access  (little-endian)
Status VendorMd::mkey_pack(const mc::uct::MemHandle& memh, std::vector<uint8_t>* out) const {
  const auto* h = dynamic_cast<const VendorMemHandle*>(&memh);
  if (!h) {
    MC_LOG(error) << "vendor: mkey_pack of a handle from another memory domain";
    return Status::InvalidParam;
  }
  std::vector<uint8_t> payload;
  mc::ucs::WireWriter w(&payload);
  w.u64(h->id());
  w.u64(reinterpret_cast<uintptr_t>(h->address()));
  w.u64(h->length());
  w.u32(h->access());
  mc::uct::rkey_pack_envelope(name_, payload, out);
  return Status::Ok;
}

Result<std::unique_ptr<mc::uct::Rkey>> VendorMd::rkey_unpack(
    std::span<const uint8_t> packed) const {
  MC_ASSIGN_OR_RETURN(std::span<const uint8_t> payload,
                      mc::uct::rkey_unpack_envelope(name_, packed));
  mc::ucs::WireReader r(payload);
  const uint64_t id = r.u64();
  VendorRegion region;
  region.base = r.u64();
  region.length = r.u64();
  region.access = r.u32();
  if (!r.at_end() || region.length == 0 || region.base + region.length < region.base) {
    MC_LOG(error) << "vendor: malformed rkey payload (" << payload.size() << " bytes)";
    return Status::InvalidParam;
  }
  return std::unique_ptr<mc::uct::Rkey>(new VendorRkey(id, region));
}

Status VendorMd::check_access(uint64_t id, uint64_t addr, uint64_t len, unsigned access) const {
  std::lock_guard guard(lock_);
  auto it = regions_.find(id);
  if (it == regions_.end()) {
    MC_LOG(error) << "vendor: access with rkey " << id << " to a region that is not registered";
    return Status::InvalidParam;
  }
  if ((it->second.access & access) != access) {
    MC_LOG(error) << "vendor: region " << id << " does not allow remote "
                  << (access & mc::uct::kAccessRemoteWrite ? "write" : "read");
    return Status::InvalidParam;
  }
  if (!region_contains(it->second, addr, len)) {
    MC_LOG(error) << "vendor: access [0x" << std::hex << addr << ", +" << std::dec << len
                  << ") is outside registered region " << id;
    return Status::InvalidParam;
  }
  return Status::Ok;
}

}  // namespace vendor
