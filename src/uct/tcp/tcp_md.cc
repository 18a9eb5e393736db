// SPDX-License-Identifier: Apache-2.0
// tcp memory domain.
#include "uct/tcp/tcp_md.h"

#include <sstream>

#include "ucs/log/log.h"
#include "uct/base/rkey_codec.h"
#include "uct/tcp/tcp_device.h"
#include "uct/tcp/tcp_iface.h"

namespace mc::uct::tcp {

namespace {

class TcpMemHandle : public MemHandle {
 public:
  TcpMemHandle(TcpMd* md, std::shared_ptr<TcpRegion> region)
      : MemHandle(reinterpret_cast<void*>(region->base), region->length, region->access,
                  MemType::Host),
        md_(md),
        region_(std::move(region)) {}
  ~TcpMemHandle() override { md_->forget(region_); }
  const TcpRegion& region() const { return *region_; }

 private:
  TcpMd* md_;
  std::shared_ptr<TcpRegion> region_;
};

}  // namespace

TcpMd::TcpMd(TcpConfig config) : config_(std::move(config)), rng_(std::random_device{}()) {}

MdAttr TcpMd::query() const {
  MdAttr attr;
  attr.flags = kMdReg | kMdNeedRkey;
  attr.reg_mem_types = mem_type_bit(MemType::Host);
  attr.access_mem_types = mem_type_bit(MemType::Host);
  attr.reg_cost = LinearFunc{100e-9, 0};  // a map insert under a lock; nothing is pinned
  attr.rkey_packed_size = rkey_envelope_size(name_) + wire::kRkeyPayloadSize;
  return attr;
}

std::vector<TlResource> TcpMd::query_tl_resources() const {
  std::vector<TlResource> out;
  for (const NetDevice& d : list_devices(config_.devices)) {
    out.push_back(TlResource{"tcp", d.name, DeviceType::Net, -1});
  }
  return out;
}

Result<std::unique_ptr<Iface>> TcpMd::iface_open(const IfaceParams& params) {
  TcpConfig config = config_;
  if (params.sources) {
    MC_ASSIGN_OR_RETURN(config,
                        ucs::config::read_table<TcpConfig>(tcp_config_table(), *params.sources));
  }
  MC_ASSIGN_OR_RETURN(auto iface, TcpIface::create(this, params, config));
  return std::unique_ptr<Iface>(std::move(iface));
}

Result<std::unique_ptr<MemHandle>> TcpMd::mem_reg(void* address, size_t length, unsigned access) {
  if (!address || length == 0 ||
      reinterpret_cast<uintptr_t>(address) + length < reinterpret_cast<uintptr_t>(address)) {
    MC_LOG(error) << "tcp: cannot register " << length << " bytes at " << address;
    return Status::InvalidParam;
  }
  auto region = std::make_shared<TcpRegion>();
  region->base = reinterpret_cast<uintptr_t>(address);
  region->length = length;
  region->access = access;
  {
    std::lock_guard guard(lock_);
    region->id = next_id_++;
    region->key = rng_();
    regions_.emplace(region->id, region);
  }
  return std::unique_ptr<MemHandle>(new TcpMemHandle(this, std::move(region)));
}

void TcpMd::forget(const std::shared_ptr<TcpRegion>& region) {
  {
    std::lock_guard guard(lock_);
    regions_.erase(region->id);
  }
  // Waits for a receive or send that is inside the memory right now.
  std::unique_lock use(region->use);
  region->revoked = true;
}

Status TcpMd::mkey_pack(const MemHandle& memh, std::vector<uint8_t>* out) const {
  const auto* h = dynamic_cast<const TcpMemHandle*>(&memh);
  if (!h) {
    MC_LOG(error) << "tcp: mkey_pack of a handle from another memory domain";
    return Status::InvalidParam;
  }
  const TcpRegion& r = h->region();
  if ((r.access & kAccessRemote) == 0) {
    MC_LOG(error) << "tcp: mkey_pack of region " << r.id << ", which allows no remote access";
    return Status::InvalidParam;
  }
  std::vector<uint8_t> payload;
  wire::encode_rkey({r.id, r.key, r.base, r.length, r.access}, &payload);
  rkey_pack_envelope(name_, payload, out);
  return Status::Ok;
}

Result<std::unique_ptr<Rkey>> TcpMd::rkey_unpack(std::span<const uint8_t> packed) const {
  MC_ASSIGN_OR_RETURN(std::span<const uint8_t> payload, rkey_unpack_envelope(name_, packed));
  wire::RkeyPayload p;
  std::string why;
  if (!wire::decode_rkey(payload, &p, &why)) {
    MC_LOG(error) << "tcp: malformed rkey payload (" << payload.size() << " bytes): " << why;
    return Status::InvalidParam;
  }
  return std::unique_ptr<Rkey>(new TcpRkey(p));
}

Result<std::shared_ptr<TcpRegion>> TcpMd::find_region(uint64_t id, uint64_t key, uint64_t addr,
                                                      size_t len, unsigned access,
                                                      std::string* why) const {
  std::shared_ptr<TcpRegion> region;
  {
    std::lock_guard guard(lock_);
    auto it = regions_.find(id);
    if (it != regions_.end()) region = it->second;
  }
  std::ostringstream reason;
  if (!region) {
    reason << "region " << id << " is not registered";
  } else if (region->key != key) {
    reason << "wrong key for region " << id;
  } else if ((region->access & access) != access) {
    reason << "region " << id << " does not allow remote "
           << (access & kAccessRemoteWrite ? "write" : "read");
  } else if (addr < region->base || len > region->length ||
             addr - region->base > region->length - len) {
    reason << "[0x" << std::hex << addr << ", +" << std::dec << len << ") is outside region " << id
           << " [0x" << std::hex << region->base << ", +" << std::dec << region->length << ")";
  } else {
    return region;
  }
  if (why) *why = reason.str();
  return Status::Rejected;
}

}  // namespace mc::uct::tcp
