// SPDX-License-Identifier: Apache-2.0
// sm memory domain.
#include "uct/sm/sm_md.h"

#include <unistd.h>

#include "ucs/log/log.h"
#include "ucs/sys/sys.h"
#include "uct/base/rkey_codec.h"
#include "uct/sm/sm_iface.h"
#include "uct/sm/sm_proc.h"
#include "uct/sm/sm_region.h"

namespace mc::uct::sm {

SmMemHandle::SmMemHandle(void* address, size_t length, unsigned access, uint64_t reg_id,
                         std::unique_ptr<ShmSegment> segment)
    : MemHandle(address, length, access, MemType::Host),
      reg_id_(reg_id),
      segment_(std::move(segment)) {}

SmMemHandle::~SmMemHandle() {
  RegionTable::instance().remove(reg_id_);
}

MdAttr SmMd::query() const {
  MdAttr attr;
  attr.flags = kMdAlloc | kMdReg | kMdNeedRkey;
  attr.reg_mem_types = mem_type_bit(MemType::Host);
  attr.access_mem_types = mem_type_bit(MemType::Host);
  attr.alloc_mem_types = mem_type_bit(MemType::Host);
  attr.detect_mem_types = 0;
  attr.reg_cost = LinearFunc{100e-9, 0};  // a table insert: nothing is pinned
  attr.max_alloc = SIZE_MAX / 2;
  attr.rkey_packed_size = rkey_envelope_size(name_) + RkeyInfo::kMaxPayload;
  return attr;
}

std::vector<TlResource> SmMd::query_tl_resources() const {
  return {TlResource{"sm", "memory", DeviceType::Shm, -1}};
}

Result<std::unique_ptr<Iface>> SmMd::iface_open(const IfaceParams& params) {
  if (params.dev_name != "memory") {
    MC_LOG(error) << "sm transport has no device '" << params.dev_name << "' (only 'memory')";
    return Status::NoDevice;
  }
  SmConfig config = config_;
  if (params.sources) {
    MC_ASSIGN_OR_RETURN(config, sm_config_read(*params.sources));
  }
  // Segments of processes that died without closing their ifaces.
  remove_stale_segments();
  MC_ASSIGN_OR_RETURN(auto iface, SmIface::create(this, config, params));
  return std::unique_ptr<Iface>(std::move(iface));
}

Result<std::unique_ptr<MemHandle>> SmMd::mem_reg(void* address, size_t length, unsigned access) {
  if (!address || length == 0) {
    MC_LOG(error) << "sm: cannot register " << length << " bytes at " << address;
    return Status::InvalidParam;
  }
  const uint64_t id =
      RegionTable::instance().add(Region{reinterpret_cast<uintptr_t>(address), length, access});
  return std::unique_ptr<MemHandle>(new SmMemHandle(address, length, access, id, nullptr));
}

Result<std::unique_ptr<MemHandle>> SmMd::mem_alloc(size_t length, MemType type, unsigned access) {
  if (type != MemType::Host) {
    MC_LOG(error) << "sm: cannot allocate " << mem_type_name(type) << " memory";
    return Status::Unsupported;
  }
  if (length == 0) {
    MC_LOG(error) << "sm: cannot allocate 0 bytes";
    return Status::InvalidParam;
  }
  MC_ASSIGN_OR_RETURN(auto segment, ShmSegment::create(SegKind::Memory, length));
  void* address = segment->data();
  const uint64_t id =
      RegionTable::instance().add(Region{reinterpret_cast<uintptr_t>(address), length, access});
  return std::unique_ptr<MemHandle>(
      new SmMemHandle(address, length, access, id, std::move(segment)));
}

Status SmMd::mkey_pack(const MemHandle& memh, std::vector<uint8_t>* out) const {
  const auto* h = dynamic_cast<const SmMemHandle*>(&memh);
  if (!h) {
    MC_LOG(error) << "sm: mkey_pack of a handle from another memory domain";
    return Status::InvalidParam;
  }
  if ((h->access() & kAccessRemote) == 0) {
    MC_LOG(error) << "sm: mkey_pack of memory registered without remote access";
    return Status::InvalidParam;
  }
  RkeyInfo info;
  info.kind = h->segment() ? RkeyKind::Shm : RkeyKind::Cma;
  info.pid = static_cast<uint32_t>(getpid());
  info.start = own_start_time();
  info.boot_hash = ucs::boot_id_hash();
  info.pid_ns = pid_ns_inode();
  info.reg_id = h->reg_id();
  info.base = reinterpret_cast<uintptr_t>(h->address());
  info.length = h->length();
  info.access = h->access();
  if (h->segment()) {
    info.seg_counter = h->segment()->name().counter;
    info.seg_random = h->segment()->name().random;
  }
  std::vector<uint8_t> payload;
  info.pack(&payload);
  rkey_pack_envelope(name_, payload, out);
  return Status::Ok;
}

Result<std::unique_ptr<Rkey>> SmMd::rkey_unpack(std::span<const uint8_t> packed) const {
  MC_ASSIGN_OR_RETURN(std::span<const uint8_t> payload, rkey_unpack_envelope(name_, packed));
  RkeyInfo info;
  if (!info.unpack(payload)) {
    MC_LOG(error) << "sm: malformed packed rkey (" << packed.size() << " bytes)";
    return Status::InvalidParam;
  }
  if (info.boot_hash != ucs::boot_id_hash() || info.pid_ns != pid_ns_inode()) {
    MC_LOG(error) << "sm: rkey of process " << info.pid
                  << " comes from another host, boot or pid namespace";
    return Status::Unreachable;
  }
  // The key names a process by pid; a pid reused by another process must
  // never be written to.
  if (!process_alive(static_cast<pid_t>(info.pid), info.start)) {
    MC_LOG(error) << "sm: rkey owner process " << info.pid << " is gone";
    return Status::Unreachable;
  }
  std::shared_ptr<ShmSegment> segment;
  if (info.kind == RkeyKind::Shm) {
    MC_ASSIGN_OR_RETURN(segment, map_segment(info));
  }
  return std::unique_ptr<Rkey>(new SmRkey(info, std::move(segment)));
}

Result<std::shared_ptr<ShmSegment>> SmMd::map_segment(const RkeyInfo& info) const {
  const SegmentName name{info.pid, SegKind::Memory, info.seg_counter, info.seg_random};
  const std::string key = name.str();
  std::lock_guard guard(lock_);
  if (auto cached = mappings_[key].lock()) return cached;
  MC_ASSIGN_OR_RETURN(std::unique_ptr<ShmSegment> segment, ShmSegment::attach(name, info.start));
  if (segment->data_size() < info.length) {
    MC_LOG(error) << "sm: rkey range of " << info.length << " bytes exceeds segment " << key << " ("
                  << segment->data_size() << " bytes)";
    return Status::InvalidParam;
  }
  std::shared_ptr<ShmSegment> shared(std::move(segment));
  mappings_[key] = shared;
  // Drop the entries of mappings that are gone, so the map stays small.
  std::erase_if(mappings_, [](const auto& e) { return e.second.expired(); });
  return shared;
}

}  // namespace mc::uct::sm
