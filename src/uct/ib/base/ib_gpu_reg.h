// SPDX-License-Identifier: Apache-2.0
// How an ib memory domain registers GPU (CUDA device) memory, chosen once
// when it opens (MC_IB_GPU_REG): a dma-buf of the range exported by the
// CUDA driver and registered with ibv_reg_dmabuf_mr, or plain ibv_reg_mr
// served by the nvidia_peermem kernel module; or not at all, and why.
#pragma once

#include <string>
#include <utility>

#include "uct/api/types.h"
#include "uct/ib/base/cuda_driver.h"
#include "uct/ib/base/ib_config.h"
#include "uct/ib/base/ib_verbs.h"

namespace mc::uct::ib {

/// A dma-buf fd of a GPU allocation's pages; closed when it goes.
class DmaBuf {
 public:
  DmaBuf(int fd, uint64_t offset) : fd_(fd), offset_(offset) {}
  DmaBuf(DmaBuf&& other) noexcept : fd_(other.fd_), offset_(other.offset_) { other.fd_ = -1; }
  DmaBuf& operator=(DmaBuf&& other) noexcept {
    std::swap(fd_, other.fd_);
    offset_ = other.offset_;
    return *this;
  }
  ~DmaBuf();
  int fd() const { return fd_; }
  /// Where the registered range starts in the dma-buf.
  uint64_t offset() const { return offset_; }

 private:
  int fd_;
  uint64_t offset_;
};

class IbGpuReg {
 public:
  enum class Path { None, DmaBuf, PeerMem };

  /// Chooses the path `config` asks for with what the CUDA driver
  /// (config.cuda_driver), the verbs provider `ops` (may be null) and the
  /// loaded kernel modules (config.sys_module) offer.
  IbGpuReg(const IbConfig& config, const VerbsOps* ops);

  /// Whether the peer-memory path is built (not configured with
  /// --without-nvidia-peermem).
  static bool peermem_built();

  Path path() const { return path_; }
  /// "GPU memory registration: dma-buf (...)", "...: peer memory (...)" or
  /// "...: none (<why>)" (mc_info -d prints it).
  const std::string& describe() const { return describe_; }
  /// Whether `address` is CUDA device memory (managed memory is not: it is
  /// registered as host memory). False when no CUDA driver is loaded.
  bool is_gpu(const void* address) const;
  /// With the dma-buf path in auto mode: whether a range the driver cannot
  /// export goes through the peer-memory path instead.
  bool peermem_fallback() const { return peermem_fallback_; }
  /// A dma-buf of the page-aligned allocation holding [start, start + length),
  /// with the offset of `start` in it. InvalidParam when the range leaves its
  /// allocation; IoError naming the driver call and its error otherwise
  /// (logged by the caller, who may fall back).
  Result<DmaBuf> export_dmabuf(uintptr_t start, size_t length, std::string* error) const;

 private:
  std::string no_dmabuf_reason(const VerbsOps* ops) const;
  std::string no_peermem_reason(const IbConfig& config) const;

  const CudaDriverOps* cuda_ = nullptr;
  Path path_ = Path::None;
  bool peermem_fallback_ = false;
  std::string describe_;
};

}  // namespace mc::uct::ib
