// SPDX-License-Identifier: Apache-2.0
// nvmeof memory domain.
#include "uct/nvmeof/nvmeof_md.h"

#include <limits.h>

#include <utility>

#include "ucs/datastruct/wire.h"
#include "ucs/log/log.h"
#include "ucs/sys/sys.h"
#include "uct/base/rkey_codec.h"
#include "uct/nvmeof/nvmeof_iface.h"

namespace mc::uct::nvmeof {

namespace {

// Payload: u64 boot id hash | u64 length | u32 access | u16 path length |
// path bytes  (little-endian)
constexpr size_t kRkeyFixed = 8 + 8 + 4 + 2;

}  // namespace

NvmeofMd::NvmeofMd(NvmeofConfig config) : config_(std::move(config)) {
  if (config_.cufile == CufileMode::Off) {
    cufile_why_ = "off by MC_NVMEOF_CUFILE";
  } else {
    cufile_ = Cufile::open(config_.cufile_lib, &cufile_why_);
  }
  if (cufile_) {
    MC_LOG(info) << "nvmeof: cuFile: " << config_.cufile_lib
                 << " loaded, driver open: GPU memory moves to and from files directly";
  } else if (config_.cufile == CufileMode::On) {
    MC_LOG(error) << "nvmeof: cuFile cannot be used (" << cufile_why_
                  << ") and MC_NVMEOF_CUFILE=on: GPU memory <-> file transfers will fail";
  } else {
    MC_LOG(info) << "nvmeof: cuFile not used (" << cufile_why_
                 << "): GPU memory goes through host bounce buffers";
  }
}

MdAttr NvmeofMd::query() const {
  MdAttr attr;
  attr.flags = kMdNeedRkey | kMdRegFile;
  attr.reg_mem_types = mem_type_bit(MemType::File);
  attr.access_mem_types =
      mem_type_bit(MemType::Host) | (access_gpu() ? mem_type_bit(MemType::Cuda) : 0);
  attr.detect_mem_types = 0;
  attr.reg_cost = LinearFunc{20e-6, 0};  // open + fstat (+ an O_DIRECT open)
  attr.rkey_packed_size = rkey_envelope_size(name_) + kRkeyFixed + PATH_MAX;
  attr.notes.push_back(cufile_ ? "cuFile: " + config_.cufile_lib + " loaded, driver open"
                               : "cuFile: not used (" + cufile_why_ + ")" +
                                     (config_.cufile == CufileMode::On
                                          ? "; MC_NVMEOF_CUFILE=on: GPU transfers fail"
                                          : "; GPU memory goes through host bounce buffers"));
  return attr;
}

std::vector<TlResource> NvmeofMd::query_tl_resources() const {
  return {TlResource{"nvmeof", "file", DeviceType::Storage, -1}};
}

Result<std::unique_ptr<Iface>> NvmeofMd::iface_open(const IfaceParams& params) {
  if (params.dev_name != "file") {
    MC_LOG(error) << "nvmeof transport has no device '" << params.dev_name << "' (only 'file')";
    return Status::NoDevice;
  }
  return std::unique_ptr<Iface>(new NvmeofIface(this, config_));
}

Result<std::unique_ptr<MemHandle>> NvmeofMd::mem_reg(void* address, size_t length, unsigned) {
  MC_LOG(debug) << "nvmeof: host memory (" << length << " bytes at " << address
                << ") needs no registration; files are registered with mem_reg_file";
  return Status::Unsupported;
}

Result<std::unique_ptr<MemHandle>> NvmeofMd::mem_reg_file(const std::string& path,
                                                          unsigned access) {
  if (path.empty() || path.size() >= PATH_MAX) {
    MC_LOG(error) << "nvmeof: cannot register a file with a path of " << path.size() << " bytes";
    return Status::InvalidParam;
  }
  MC_ASSIGN_OR_RETURN(
      std::shared_ptr<NvmeofFile> file,
      NvmeofFile::open(path, (access & kAccessRemoteWrite) != 0, config_.direct_io));
  return std::unique_ptr<MemHandle>(new NvmeofFileHandle(std::move(file), access));
}

Status NvmeofMd::mkey_pack(const MemHandle& memh, std::vector<uint8_t>* out) const {
  const auto* h = dynamic_cast<const NvmeofFileHandle*>(&memh);
  if (!h) {
    MC_LOG(error) << "nvmeof: mkey_pack of a handle that is not a file registration of nvmeof";
    return Status::InvalidParam;
  }
  if (!(h->access() & kAccessRemote)) {
    MC_LOG(error) << "nvmeof: mkey_pack of " << h->file()->path() << ": no remote access";
    return Status::InvalidParam;
  }
  std::vector<uint8_t> payload;
  ucs::WireWriter w(&payload);
  w.u64(ucs::boot_id_hash());
  w.u64(h->length());
  w.u32(h->access());
  w.str(h->file()->path());
  rkey_pack_envelope(name_, payload, out);
  return Status::Ok;
}

Result<std::unique_ptr<Rkey>> NvmeofMd::rkey_unpack(std::span<const uint8_t> packed) const {
  MC_ASSIGN_OR_RETURN(std::span<const uint8_t> payload, rkey_unpack_envelope(name_, packed));
  ucs::WireReader r(payload);
  auto key = std::make_unique<NvmeofRkey>();
  key->boot_id = r.u64();
  key->length = r.u64();
  key->access = r.u32();
  key->path = r.str();
  if (!r.at_end() || key->length == 0 || key->path.empty() ||
      key->path.find('\0') != std::string::npos || (key->access & ~unsigned{kAccessAll}) != 0) {
    MC_LOG(error) << "nvmeof: malformed rkey payload (" << payload.size() << " bytes)";
    return Status::InvalidParam;
  }
  return std::unique_ptr<Rkey>(std::move(key));
}

}  // namespace mc::uct::nvmeof
