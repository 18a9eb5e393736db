// SPDX-License-Identifier: Apache-2.0
// nvmeof memory domain: registers files and block devices (mem_reg_file),
// packs rkeys that name them, and opens the "file" iface.
#pragma once

#include <memory>
#include <string>

#include "uct/api/md.h"
#include "uct/nvmeof/nvmeof_config.h"
#include "uct/nvmeof/nvmeof_cufile.h"
#include "uct/nvmeof/nvmeof_file.h"

namespace mc::uct::nvmeof {

/// A registered file: its open descriptors live as long as the handle.
class NvmeofFileHandle : public MemHandle {
 public:
  NvmeofFileHandle(std::shared_ptr<NvmeofFile> file, unsigned access)
      : MemHandle(nullptr, file->open_size(), access, MemType::File), file_(std::move(file)) {}
  const std::shared_ptr<NvmeofFile>& file() const { return file_; }

 private:
  std::shared_ptr<NvmeofFile> file_;
};

/// An unpacked nvmeof rkey: which file on which host, how long, what access.
class NvmeofRkey : public Rkey {
 public:
  uint64_t boot_id = 0;  ///< host that registered it (ucs::boot_id_hash)
  uint64_t length = 0;   ///< file length at registration
  uint32_t access = 0;   ///< MemAccess bits
  std::string path;      ///< path on that host
};

class NvmeofMd : public MemoryDomain {
 public:
  /// Loads cuFile unless MC_NVMEOF_CUFILE=off; the outcome is logged and
  /// is one of query()'s notes.
  explicit NvmeofMd(NvmeofConfig config);

  const std::string& name() const override { return name_; }
  MdAttr query() const override;
  std::vector<TlResource> query_tl_resources() const override;
  Result<std::unique_ptr<Iface>> iface_open(const IfaceParams& params) override;
  /// Host memory needs no registration here: Unsupported.
  Result<std::unique_ptr<MemHandle>> mem_reg(void* address, size_t length,
                                             unsigned access) override;
  Result<std::unique_ptr<MemHandle>> mem_reg_file(const std::string& path,
                                                  unsigned access) override;
  Status mkey_pack(const MemHandle& memh, std::vector<uint8_t>* out) const override;
  Result<std::unique_ptr<Rkey>> rkey_unpack(std::span<const uint8_t> packed) const override;

  const NvmeofConfig& config() const { return config_; }
  /// cuFile with its driver open, or null: GPU memory is not accessed.
  const std::shared_ptr<const Cufile>& cufile() const { return cufile_; }
  /// Why cuFile is not used (empty when it is).
  const std::string& cufile_why() const { return cufile_why_; }
  /// GPU memory is accessed: cuFile is in use, or MC_NVMEOF_CUFILE=on
  /// (without cuFile, GPU transfers then fail with cufile_why()).
  bool access_gpu() const { return cufile_ || config_.cufile == CufileMode::On; }

 private:
  const std::string name_ = "nvmeof";
  NvmeofConfig config_;
  std::shared_ptr<const Cufile> cufile_;
  std::string cufile_why_;
};

}  // namespace mc::uct::nvmeof
