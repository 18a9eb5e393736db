// SPDX-License-Identifier: Apache-2.0
// cuda_ipc memory domain: export on registration, mapping on unpack.
#include "uct/cuda/cuda_ipc/cuda_ipc_md.h"

#include <unistd.h>

#include <cstring>

#include "ucs/log/log.h"
#include "ucs/sys/sys.h"
#include "uct/base/rkey_codec.h"
#include "uct/cuda/cuda_ipc/cuda_ipc_iface.h"

namespace mc::uct::cuda {

namespace {

class CudaIpcMemHandle : public MemHandle {
 public:
  CudaIpcMemHandle(const CudaIpcMd* md, void* address, size_t length, unsigned access,
                   CudaIpcKey key)
      : MemHandle(address, length, access, MemType::Cuda), md_(md), key_(std::move(key)) {}
  // Unregistering ends the export: peers that opened it are told, and a
  // peer that asks later is refused.
  ~CudaIpcMemHandle() override { md_->server().remove(key_.export_id); }
  const CudaIpcKey& key() const { return key_; }

 private:
  const CudaIpcMd* md_;
  CudaIpcKey key_;
};

std::string hex(const std::array<uint8_t, 16>& b) {
  static const char* d = "0123456789abcdef";
  std::string s;
  for (uint8_t c : b) {
    s += d[c >> 4];
    s += d[c & 15];
  }
  return s;
}

// Exactly why fabric handles cannot be exported here; empty when they can.
std::string fabric_check(const CuDriver& d, const std::vector<IpcDevice>& devices,
                         const CudaIpcConfig& config) {
  if (config.fabric == FabricMode::No) return "MC_CUDA_IPC_FABRIC=n";
  if (!d.has_vmm()) {
    return "the CUDA driver (" + std::to_string(d.version) +
           ") lacks the virtual memory management API";
  }
  if (d.version < 12030) {
    return "the CUDA driver " + std::to_string(d.version / 1000) + "." +
           std::to_string(d.version % 1000 / 10) +
           " is older than 12.3, the first with fabric handles";
  }
  for (const IpcDevice& dev : devices) {
    int supported = 0;
    cu::Device h = 0;
    if (d.device_get(&h, dev.ordinal) != cu::kSuccess ||
        d.device_get_attribute(&supported, cu::kDevAttrFabricSupported, h) != cu::kSuccess ||
        !supported) {
      return "GPU " + std::to_string(dev.ordinal) +
             " does not support fabric handles (CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED "
             "is 0: not in an NVLink domain)";
    }
  }
  if (access(config.imex_channel.c_str(), R_OK | W_OK) != 0) {
    return "no IMEX channel: " + config.imex_channel + ": " + std::strerror(errno) +
           " (the nvidia-imex service is not running, or no channel was made; "
           "MC_CUDA_IPC_IMEX_CHANNEL)";
  }
  return "";
}

}  // namespace

Result<std::unique_ptr<CudaIpcMd>> CudaIpcMd::create(const CuDriver* driver,
                                                     const CudaIpcConfig& config) {
  std::unique_ptr<CudaIpcMd> md(new CudaIpcMd(driver, config));
  int count = 0;
  if (driver->device_get_count(&count) != cu::kSuccess) count = 0;
  for (int i = 0; i < count; ++i) {
    cu::Device dev = 0;
    cu::Uuid uuid{};
    if (driver->device_get(&dev, i) != cu::kSuccess ||
        driver->device_get_uuid(&uuid, dev) != cu::kSuccess) {
      continue;
    }
    IpcDevice d{i, {}};
    std::memcpy(d.uuid.data(), uuid.bytes, d.uuid.size());
    md->devices_.push_back(d);
  }
  md->fabric_why_ = fabric_check(*driver, md->devices_, config);
  // Which NVLink domain: peers of other hosts in the same one are reached
  // by fabric handles. Without NVML that cannot be told: none are.
  if (md->fabric_why_.empty() && !md->devices_.empty() &&
      !nvml_gpu_fabric(config.nvml, md->devices_.front().uuid, &md->fabric_, &md->fabric_why_)) {
    md->fabric_why_ = "the NVLink domain is unknown: " + md->fabric_why_;
  }
  MC_ASSIGN_OR_RETURN(md->server_, IpcServer::create());
  return md;
}

MdAttr CudaIpcMd::query() const {
  MdAttr attr;
  attr.flags = kMdReg | kMdNeedRkey;
  attr.reg_mem_types = mem_type_bit(MemType::Cuda);
  attr.access_mem_types = mem_type_bit(MemType::Cuda);
  // An export is a driver call and a table entry (the mapping cost is the
  // peer's, once per allocation).
  attr.reg_cost = LinearFunc{20e-6, 0};
  attr.rkey_packed_size = rkey_envelope_size(name_) + 152 + CudaIpcKey::kMaxSocketName;
  attr.notes.push_back("fabric handles (MNNVL): " +
                       (fabric_why_.empty() ? "available, NVLink domain: cluster " +
                                                  hex(fabric_.cluster_uuid) + " clique " +
                                                  std::to_string(fabric_.clique_id)
                                            : "unavailable: " + fabric_why_));
  attr.notes.push_back("owner socket: @" + server_->name());
  std::string peers;
  for (const IpcDevice& a : devices_) {
    for (const IpcDevice& b : devices_) {
      int can = 0;
      cu::Device da = 0, db = 0;
      if (a.ordinal < b.ordinal && driver_->device_get(&da, a.ordinal) == cu::kSuccess &&
          driver_->device_get(&db, b.ordinal) == cu::kSuccess &&
          driver_->device_can_access_peer(&can, da, db) == cu::kSuccess) {
        peers += (peers.empty() ? "" : ", ") + std::to_string(a.ordinal) + "<->" +
                 std::to_string(b.ordinal) + (can ? " yes" : " no");
      }
    }
  }
  attr.notes.push_back(std::to_string(devices_.size()) + " GPU(s); peer access: " +
                       (peers.empty() ? "none to check" : peers));
  return attr;
}

std::vector<TlResource> CudaIpcMd::query_tl_resources() const {
  return {TlResource{"cuda_ipc", "cuda", DeviceType::Acc, -1}};
}

Result<std::unique_ptr<Iface>> CudaIpcMd::iface_open(const IfaceParams& params) {
  if (params.dev_name != "cuda") {
    MC_LOG(error) << "cuda_ipc has no device '" << params.dev_name << "' (only 'cuda')";
    return Status::NoDevice;
  }
  return CudaIpcIface::create(this);
}

Status CudaIpcMd::export_allocation(uintptr_t base, int ordinal, CudaIpcKey* key,
                                    int* fd) const {
  const CuDriver& d = *driver_;
  *fd = -1;
  const auto ptr = static_cast<cu::DevicePtr>(base);
  if (config_.fabric != FabricMode::Yes) {
    cu::IpcMemHandle h{};
    const cu::Result rc = d.ipc_get_mem_handle(&h, ptr);
    if (rc == cu::kSuccess) {
      key->kind = IpcHandleKind::Legacy;
      std::memcpy(key->handle.data(), h.reserved, key->handle.size());
      return Status::Ok;
    }
    MC_LOG(debug) << "cuda_ipc: cuIpcGetMemHandle(0x" << std::hex << base << std::dec
                  << "): " << d.error_string(rc) << "; trying a VMM export";
  }
  if (!d.has_vmm()) {
    MC_LOG(error) << "cuda_ipc: cannot export GPU " << ordinal << " memory at 0x" << std::hex
                  << base << std::dec
                  << ": cuIpcGetMemHandle refused it and the driver has no VMM API";
    return Status::Unsupported;
  }
  cu::MemHandle mh = 0;
  cu::Result rc = d.mem_retain_allocation_handle(&mh, reinterpret_cast<void*>(base));
  if (rc != cu::kSuccess) {
    MC_LOG(error) << "cuda_ipc: cannot export GPU memory at 0x" << std::hex << base << std::dec
                  << ": neither cuIpcGetMemHandle nor cuMemRetainAllocationHandle ("
                  << d.error_string(rc) << ") accepts it";
    return Status::Unsupported;
  }
  cu::MemAllocationProp prop{};
  (void)d.mem_get_allocation_properties(&prop, mh);
  const bool fabric_ok = fabric_why_.empty() && (prop.requested_handle_types & cu::kHandleTypeFabric);
  Status status = Status::Ok;
  if (config_.fabric == FabricMode::Yes && !fabric_ok) {
    MC_LOG(error) << "cuda_ipc: MC_CUDA_IPC_FABRIC=y, but GPU memory at 0x" << std::hex << base
                  << std::dec << " cannot be exported as a fabric handle: "
                  << (fabric_why_.empty() ? "it was allocated without CU_MEM_HANDLE_TYPE_FABRIC"
                                          : fabric_why_);
    status = Status::Unsupported;
  } else if (fabric_ok && config_.fabric != FabricMode::No) {
    cu::FabricHandle fh{};
    rc = d.mem_export_to_shareable_handle(&fh, mh, cu::kHandleTypeFabric, 0);
    if (rc == cu::kSuccess) {
      key->kind = IpcHandleKind::Fabric;
      std::memcpy(key->handle.data(), fh.data, key->handle.size());
    } else {
      MC_LOG(error) << "cuda_ipc: cuMemExportToShareableHandle(fabric): " << d.error_string(rc);
      status = Status::IoError;
    }
  } else if (prop.requested_handle_types & cu::kHandleTypePosixFd) {
    int shared = -1;
    rc = d.mem_export_to_shareable_handle(&shared, mh, cu::kHandleTypePosixFd, 0);
    if (rc == cu::kSuccess) {
      key->kind = IpcHandleKind::PosixFd;
      *fd = shared;
    } else {
      MC_LOG(error) << "cuda_ipc: cuMemExportToShareableHandle(posix fd): " << d.error_string(rc);
      status = Status::IoError;
    }
  } else {
    MC_LOG(error) << "cuda_ipc: the VMM allocation at 0x" << std::hex << base << std::dec
                  << " was made without a shareable handle type (cuMemCreate with "
                     "CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR or FABRIC): it cannot be exported";
    status = Status::Unsupported;
  }
  (void)d.mem_release(mh);
  return status;
}

Result<std::unique_ptr<MemHandle>> CudaIpcMd::mem_reg(void* address, size_t length,
                                                      unsigned access) {
  const CuDriver& d = *driver_;
  const auto ptr = reinterpret_cast<cu::DevicePtr>(address);
  unsigned type = 0, managed = 0;
  if (!address || length == 0 ||
      d.pointer_get_attribute(&type, cu::kPointerAttrMemoryType, ptr) != cu::kSuccess ||
      type != cu::kMemoryTypeDevice ||
      (d.pointer_get_attribute(&managed, cu::kPointerAttrIsManaged, ptr) == cu::kSuccess &&
       managed)) {
    MC_LOG(error) << "cuda_ipc: registers GPU device memory only; " << length << " bytes at "
                  << address << " are not (host or managed memory)";
    return Status::InvalidParam;
  }
  int ordinal = 0;
  (void)d.pointer_get_attribute(&ordinal, cu::kPointerAttrDeviceOrdinal, ptr);
  CtxScope scope(d, ordinal);
  cu::DevicePtr base = 0;
  size_t size = 0;
  cu::Result rc = d.mem_get_address_range(&base, &size, ptr);
  if (rc != cu::kSuccess || ptr + length < ptr || ptr + length > base + size) {
    MC_LOG(error) << "cuda_ipc: [" << address << ", +" << length << ") is not inside one GPU "
                  << "allocation (cuMemGetAddressRange: "
                  << (rc == cu::kSuccess ? std::to_string(size) + " bytes at 0x" : d.error_string(rc))
                  << ")";
    return Status::InvalidParam;
  }
  CudaIpcKey key;
  int fd = -1;
  MC_RETURN_IF_ERROR(export_allocation(static_cast<uintptr_t>(base), ordinal, &key, &fd));
  for (const IpcDevice& dev : devices_) {
    if (dev.ordinal == ordinal) key.device_uuid = dev.uuid;
  }
  key.alloc_base = base;
  key.alloc_length = size;
  key.reg_base = ptr;
  key.reg_length = length;
  key.access = access;
  key.owner_pid = static_cast<uint32_t>(getpid());
  key.owner_host = ucs::boot_id_hash();
  key.socket = server_->name();
  key.export_id = server_->add(
      fd, IpcExportRange{key.alloc_base, key.alloc_length, key.reg_base, key.reg_length},
      &key.token);
  return std::unique_ptr<MemHandle>(new CudaIpcMemHandle(this, address, length, access, key));
}

Status CudaIpcMd::mkey_pack(const MemHandle& memh, std::vector<uint8_t>* out) const {
  const auto* h = dynamic_cast<const CudaIpcMemHandle*>(&memh);
  if (!h) {
    MC_LOG(error) << "cuda_ipc: mkey_pack of a handle from another memory domain";
    return Status::InvalidParam;
  }
  std::vector<uint8_t> payload;
  cuda_ipc_key_pack(h->key(), &payload);
  rkey_pack_envelope(name_, payload, out);
  return Status::Ok;
}

int CudaIpcMd::device_for(const std::array<uint8_t, 16>& uuid, std::string* why) const {
  for (const IpcDevice& dev : devices_) {
    if (dev.uuid == uuid) return dev.ordinal;
  }
  if (why) {
    *why = "the peer's GPU " + hex(uuid) +
           " is not one this process sees (another host's, or hidden by CUDA_VISIBLE_DEVICES)";
  }
  return -1;
}

bool CudaIpcMd::reaches(const std::array<uint8_t, 16>& uuid) const {
  std::string why;
  return device_for(uuid, &why) >= 0;
}

Result<std::shared_ptr<IpcMapping>> CudaIpcMd::open_mapping(const CudaIpcKey& key) const {
  const CuDriver& d = *driver_;
  const std::string what = "export " + std::to_string(key.export_id) + " of process " +
                           std::to_string(key.owner_pid) + " (" + ipc_handle_kind_name(key.kind) +
                           ", " + std::to_string(key.alloc_length) + " bytes)";
  std::string why;
  const int device = device_for(key.device_uuid, &why);
  if (device < 0) {
    MC_LOG(error) << "cuda_ipc: cannot map " << what << ": " << why;
    return Status::Unreachable;
  }
  int fd = -1;
  const bool remote_host = key.owner_host != ucs::boot_id_hash();
  if (remote_host && key.kind != IpcHandleKind::Fabric) {
    MC_LOG(error) << "cuda_ipc: cannot map " << what
                  << ": it is of another host, and only fabric handles cross hosts";
    return Status::Unreachable;
  }
  // On this host the owner is asked (stale, forged, gone, and the fd of a
  // POSIX export); a fabric handle of another host is authorised by the
  // IMEX service when the driver imports it.
  if (!remote_host) {
    const Status asked = client_.open(
        key.socket, key.export_id, key.token,
        IpcExportRange{key.alloc_base, key.alloc_length, key.reg_base, key.reg_length}, &fd, &why);
    if (asked != Status::Ok) {
      MC_LOG(error) << "cuda_ipc: cannot map " << what << ": " << why;
      return asked == Status::NoElem ? Status::InvalidParam : asked;
    }
  }
  CtxScope scope(d, device);
  if (!scope.ok()) {
    if (fd >= 0) close(fd);
    MC_LOG(error) << "cuda_ipc: cannot map " << what << ": device " << device
                  << "'s context: " << d.error_string(scope.result());
    return Status::NoDevice;
  }
  const CuDriver* dp = driver_;
  if (key.kind == IpcHandleKind::Legacy) {
    cu::IpcMemHandle h{};
    std::memcpy(h.reserved, key.handle.data(), sizeof(h.reserved));
    cu::DevicePtr p = 0;
    const cu::Result rc = d.ipc_open_mem_handle(&p, h, cu::kIpcMemLazyEnablePeerAccess);
    if (rc != cu::kSuccess) {
      MC_LOG(error) << "cuda_ipc: cannot map " << what
                    << ": cuIpcOpenMemHandle: " << d.error_string(rc);
      return Status::InvalidParam;
    }
    return std::make_shared<IpcMapping>(static_cast<uintptr_t>(p), key.alloc_length, device,
                                        [dp, p, device] {
                                          CtxScope s(*dp, device);
                                          (void)dp->ipc_close_mem_handle(p);
                                        });
  }
  if (!d.has_vmm()) {
    if (fd >= 0) close(fd);
    MC_LOG(error) << "cuda_ipc: cannot map " << what << ": this driver has no VMM API";
    return Status::Unsupported;
  }
  cu::MemHandle mh = 0;
  cu::FabricHandle fh{};
  std::memcpy(fh.data, key.handle.data(), sizeof(fh.data));
  void* shareable = key.kind == IpcHandleKind::PosixFd
                        ? reinterpret_cast<void*>(static_cast<intptr_t>(fd))
                        : static_cast<void*>(&fh);
  cu::Result rc = d.mem_import_from_shareable_handle(
      &mh, shareable,
      key.kind == IpcHandleKind::PosixFd ? cu::kHandleTypePosixFd : cu::kHandleTypeFabric);
  if (fd >= 0) close(fd);
  if (rc != cu::kSuccess) {
    MC_LOG(error) << "cuda_ipc: cannot map " << what
                  << ": cuMemImportFromShareableHandle: " << d.error_string(rc);
    return Status::InvalidParam;
  }
  const size_t len = key.alloc_length;
  cu::DevicePtr p = 0;
  rc = d.mem_address_reserve(&p, len, 0, 0, 0);
  if (rc == cu::kSuccess) {
    rc = d.mem_map(p, len, 0, mh, 0);
    if (rc != cu::kSuccess) (void)d.mem_address_free(p, len);
  }
  (void)d.mem_release(mh);  // the mapping holds the allocation from here on
  if (rc == cu::kSuccess) {
    cu::MemAccessDesc desc{{cu::kMemLocationTypeDevice, device}, cu::kMemAccessReadWrite};
    rc = d.mem_set_access(p, len, &desc, 1);
    if (rc != cu::kSuccess) {
      (void)d.mem_unmap(p, len);
      (void)d.mem_address_free(p, len);
    }
  }
  if (rc != cu::kSuccess) {
    MC_LOG(error) << "cuda_ipc: cannot map " << what << ": " << d.error_string(rc);
    return Status::IoError;
  }
  return std::make_shared<IpcMapping>(static_cast<uintptr_t>(p), len, device, [dp, p, len, device] {
    CtxScope s(*dp, device);
    (void)dp->mem_unmap(p, len);
    (void)dp->mem_address_free(p, len);
  });
}

Result<std::unique_ptr<Rkey>> CudaIpcMd::rkey_unpack(std::span<const uint8_t> packed) const {
  MC_ASSIGN_OR_RETURN(std::span<const uint8_t> payload, rkey_unpack_envelope(name_, packed));
  std::string error;
  Result<CudaIpcKey> key = cuda_ipc_key_unpack(payload, &error);
  if (!key.ok()) {
    MC_LOG(error) << "cuda_ipc: " << error;
    return key.status();
  }
  // This process's own memory: nothing to map (a cuda_ipc endpoint never
  // reaches its own process; cuda_copy does).
  if (key->socket == server_->name()) {
    return std::unique_ptr<Rkey>(new CudaIpcRkey(std::move(*key), nullptr));
  }
  MC_ASSIGN_OR_RETURN(std::shared_ptr<IpcMapping> mapping,
                      cache_.get(key->socket, key->export_id, [&] { return open_mapping(*key); }));
  return std::unique_ptr<Rkey>(new CudaIpcRkey(std::move(*key), std::move(mapping)));
}

unsigned CudaIpcMd::poll() {
  return client_.poll([this](const std::string& socket, uint64_t id) {
    cache_.invalidate(socket, id,
                      id == 0 ? "the owner process has gone"
                              : "the owner unregistered it (export " + std::to_string(id) + ")");
  });
}

}  // namespace mc::uct::cuda
