// SPDX-License-Identifier: Apache-2.0
// cuda_copy memory domain.
#include "uct/cuda/cuda_copy/cuda_copy_md.h"

#include "ucs/datastruct/wire.h"
#include "ucs/log/log.h"
#include "uct/base/rkey_codec.h"
#include "uct/cuda/cuda_copy/cuda_copy_iface.h"

namespace mc::uct::cuda {

namespace {

// Payload: u64 id | u64 base | u64 length | u32 access | u8 mem type |
// u32 device + 1 (0: host)  (little-endian)
constexpr size_t kRkeyPayload = 8 + 8 + 8 + 4 + 1 + 4;

class CudaCopyMemHandle : public MemHandle {
 public:
  CudaCopyMemHandle(CudaCopyMd* md, uint64_t id, void* address, size_t length, unsigned access,
                    MemTypeInfo info, bool pinned)
      : MemHandle(address, length, access, info.type),
        md_(md),
        id_(id),
        info_(info),
        pinned_(pinned) {}
  ~CudaCopyMemHandle() override {
    md_->forget(id_, reinterpret_cast<uintptr_t>(address()), length());
    if (pinned_) {
      const CuDriver& d = md_->driver();
      CtxScope scope(d, current_device(d));
      const cu::Result e = d.mem_host_unregister(address());
      if (e != cu::kSuccess) {
        MC_LOG(error) << "cuda_copy: cuMemHostUnregister(" << address()
                      << ") failed: " << d.error_string(e);
      }
    }
  }
  uint64_t id() const { return id_; }
  const MemTypeInfo& info() const { return info_; }

 private:
  CudaCopyMd* md_;
  uint64_t id_;
  MemTypeInfo info_;
  bool pinned_;
};

// What the driver says about `address`: device, managed or pinned host
// memory, else pageable host memory (the driver does not know it). Unknown
// (logged) when the driver fails otherwise.
MemTypeInfo query_pointer(const CuDriver& d, const void* address) {
  const auto ptr = reinterpret_cast<cu::DevicePtr>(address);
  unsigned type = 0;
  const cu::Result e = d.pointer_get_attribute(&type, cu::kPointerAttrMemoryType, ptr);
  if (e == cu::kErrorInvalidValue) return {MemType::Host, -1};  // pageable
  if (e != cu::kSuccess) {
    MC_LOG(debug) << "cuda_copy: cuPointerGetAttribute(" << address
                  << ") failed: " << d.error_string(e);
    return {MemType::Unknown, -1};
  }
  if (type == cu::kMemoryTypeHost) return {MemType::Host, -1};  // pinned by someone
  int device = 0;
  unsigned managed = 0;
  (void)d.pointer_get_attribute(&device, cu::kPointerAttrDeviceOrdinal, ptr);
  (void)d.pointer_get_attribute(&managed, cu::kPointerAttrIsManaged, ptr);
  return {managed ? MemType::CudaManaged : MemType::Cuda, device};
}

bool is_pinned_host(const CuDriver& d, const void* address) {
  unsigned type = 0;
  return d.pointer_get_attribute(&type, cu::kPointerAttrMemoryType,
                                 reinterpret_cast<cu::DevicePtr>(address)) == cu::kSuccess &&
         type == cu::kMemoryTypeHost;
}

}  // namespace

MdAttr CudaCopyMd::query() const {
  MdAttr attr;
  const MemTypeMask all = mem_type_bit(MemType::Host) | mem_type_bit(MemType::Cuda) |
                          mem_type_bit(MemType::CudaManaged);
  attr.flags = kMdReg | kMdNeedRkey;
  attr.reg_mem_types = all;
  attr.access_mem_types = all;
  attr.detect_mem_types = mem_type_bit(MemType::Cuda) | mem_type_bit(MemType::CudaManaged);
  // cuMemHostRegister pins page by page: about 10 us plus 0.1 ns per byte
  // (a few GB/s of page-table walking); device memory costs a lookup only.
  attr.reg_cost = config_.reg_host ? LinearFunc{10e-6, 0.1e-9} : LinearFunc{1e-6, 0};
  attr.rkey_packed_size = rkey_envelope_size(name_) + kRkeyPayload;
  return attr;
}

std::vector<TlResource> CudaCopyMd::query_tl_resources() const {
  return {TlResource{"cuda_copy", "cuda", DeviceType::Acc, -1}};
}

Result<std::unique_ptr<Iface>> CudaCopyMd::iface_open(const IfaceParams& params) {
  if (params.dev_name != "cuda") {
    MC_LOG(error) << "cuda_copy has no device '" << params.dev_name << "' (only 'cuda')";
    return Status::NoDevice;
  }
  return CudaCopyIface::create(this, config_);
}

MemTypeInfo CudaCopyMd::detect(const void* address, size_t length) const {
  if (auto hit = cache_.lookup(reinterpret_cast<uintptr_t>(address), length)) return *hit;
  return query_pointer(*driver_, address);
}

MemType CudaCopyMd::detect_mem_type(const void* address, size_t length) const {
  return detect(address, length).type;
}

Result<std::unique_ptr<MemHandle>> CudaCopyMd::mem_reg(void* address, size_t length,
                                                       unsigned access) {
  if (!address || length == 0) {
    MC_LOG(error) << "cuda_copy: cannot register " << length << " bytes at " << address;
    return Status::InvalidParam;
  }
  const CuDriver& d = *driver_;
  MemTypeInfo info = query_pointer(d, address);
  if (info.type == MemType::Unknown) info = {MemType::Host, -1};
  bool pinned = false;
  if (info.type == MemType::Host && config_.reg_host && !is_pinned_host(d, address)) {
    CtxScope scope(d, current_device(d));
    const cu::Result e = scope.ok()
                             ? d.mem_host_register(address, length, cu::kMemHostRegisterPortable)
                             : scope.result();
    if (e == cu::kErrorHostMemoryAlreadyRegistered) {
      // A page of the range is pinned by another registration (two buffers
      // sharing a page): copies work; that registration keeps the pin.
    } else if (e != cu::kSuccess) {
      MC_LOG(error) << "cuda_copy: cuMemHostRegister of " << length << " bytes at " << address
                    << " failed: " << d.error_string(e);
      return Status::IoError;
    } else {
      pinned = true;
    }
  }
  uint64_t id = 0;
  {
    std::lock_guard guard(lock_);
    id = next_id_++;
    regions_[id] = CudaRegion{reinterpret_cast<uintptr_t>(address), length, access, info};
  }
  cache_.insert(reinterpret_cast<uintptr_t>(address), length, info);
  return std::unique_ptr<MemHandle>(
      new CudaCopyMemHandle(this, id, address, length, access, info, pinned));
}

void CudaCopyMd::forget(uint64_t id, uintptr_t base, size_t length) {
  cache_.erase(base, length);
  std::lock_guard guard(lock_);
  regions_.erase(id);
}

Status CudaCopyMd::mkey_pack(const MemHandle& memh, std::vector<uint8_t>* out) const {
  const auto* h = dynamic_cast<const CudaCopyMemHandle*>(&memh);
  if (!h) {
    MC_LOG(error) << "cuda_copy: mkey_pack of a handle from another memory domain";
    return Status::InvalidParam;
  }
  std::vector<uint8_t> payload;
  ucs::WireWriter w(&payload);
  w.u64(h->id());
  w.u64(reinterpret_cast<uintptr_t>(h->address()));
  w.u64(h->length());
  w.u32(h->access());
  w.u8(static_cast<uint8_t>(h->info().type));
  w.u32(static_cast<uint32_t>(h->info().device + 1));
  rkey_pack_envelope(name_, payload, out);
  return Status::Ok;
}

Result<std::unique_ptr<Rkey>> CudaCopyMd::rkey_unpack(std::span<const uint8_t> packed) const {
  MC_ASSIGN_OR_RETURN(std::span<const uint8_t> payload, rkey_unpack_envelope(name_, packed));
  ucs::WireReader r(payload);
  const uint64_t id = r.u64();
  CudaRegion region{};
  region.base = r.u64();
  region.length = r.u64();
  region.access = r.u32();
  const uint8_t type = r.u8();
  const uint32_t device = r.u32();
  const bool type_ok = type <= static_cast<uint8_t>(MemType::CudaManaged);
  if (!r.at_end() || !type_ok || region.length == 0 || region.base + region.length < region.base ||
      device > 4096) {
    MC_LOG(error) << "cuda_copy: malformed rkey payload (" << payload.size() << " bytes)";
    return Status::InvalidParam;
  }
  region.info = {static_cast<MemType>(type), static_cast<int>(device) - 1};
  return std::unique_ptr<Rkey>(new CudaCopyRkey(id, region));
}

Status CudaCopyMd::check_access(const CudaCopyRkey& rkey, uint64_t addr, size_t len,
                                unsigned access) const {
  std::lock_guard guard(lock_);
  auto it = regions_.find(rkey.id);
  if (it == regions_.end() || it->second.base != rkey.region.base ||
      it->second.length != rkey.region.length) {
    MC_LOG(error) << "cuda_copy: access with rkey " << rkey.id
                  << " to a region that is not registered in this process";
    return Status::InvalidParam;
  }
  const CudaRegion& r = it->second;
  if ((r.access & access) != access) {
    MC_LOG(error) << "cuda_copy: region " << rkey.id << " does not allow remote "
                  << (access & kAccessRemoteWrite ? "write" : "read");
    return Status::InvalidParam;
  }
  if (addr < r.base || len > r.length || addr - r.base > r.length - len) {
    MC_LOG(error) << "cuda_copy: access [0x" << std::hex << addr << ", +" << std::dec << len
                  << ") is outside registered region [0x" << std::hex << r.base << ", +" << std::dec
                  << r.length << ")";
    return Status::InvalidParam;
  }
  return Status::Ok;
}

}  // namespace mc::uct::cuda
