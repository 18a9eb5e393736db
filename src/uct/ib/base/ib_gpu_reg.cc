// SPDX-License-Identifier: Apache-2.0
// The GPU registration path of the ib memory domain.
#include "uct/ib/base/ib_gpu_reg.h"

#include <unistd.h>

#include <filesystem>

namespace mc::uct::ib {

namespace {

// The peer-memory path is built unless configure was given
// --without-nvidia-peermem (which defines WITH_NVIDIA_PEERMEM=0).
#if !defined(WITH_NVIDIA_PEERMEM) || WITH_NVIDIA_PEERMEM
constexpr bool kPeermemBuilt = true;
#else
constexpr bool kPeermemBuilt = false;
#endif

}  // namespace

bool IbGpuReg::peermem_built() {
  return kPeermemBuilt;
}

DmaBuf::~DmaBuf() {
  if (fd_ >= 0) close(fd_);
}

IbGpuReg::IbGpuReg(const IbConfig& config, const VerbsOps* ops) {
  std::string why;
  if (config.gpu_reg == GpuRegMode::Off) {
    why = "MC_IB_GPU_REG=off";
  } else if (Result<const CudaDriverOps*> cuda = cuda_driver_load(config.cuda_driver, &why);
             cuda.ok()) {
    cuda_ = *cuda;
    const std::string no_dmabuf = no_dmabuf_reason(ops);
    const std::string no_peermem = no_peermem_reason(config);
    const bool want_dmabuf = config.gpu_reg != GpuRegMode::PeerMem;
    const bool want_peermem = config.gpu_reg != GpuRegMode::DmaBuf;
    if (want_dmabuf && no_dmabuf.empty()) {
      path_ = Path::DmaBuf;
      peermem_fallback_ = want_peermem && no_peermem.empty();
      describe_ = "dma-buf (cuMemGetHandleForAddressRange of " + cuda_->library +
                  ", ibv_reg_dmabuf_mr)" +
                  (peermem_fallback_ ? "; peer memory where a range has no dma-buf" : "");
    } else if (want_peermem && no_peermem.empty()) {
      path_ = Path::PeerMem;
      describe_ = "peer memory (ibv_reg_mr through the nvidia peer-memory kernel module)";
    } else if (want_dmabuf && want_peermem) {
      why = "no dma-buf: " + no_dmabuf + "; no peer memory: " + no_peermem;
    } else {
      why = want_dmabuf ? "no dma-buf: " + no_dmabuf : "no peer memory: " + no_peermem;
    }
  }
  if (path_ == Path::None) describe_ = "none (" + why + ")";
  describe_ = "GPU memory registration: " + describe_;
}

std::string IbGpuReg::no_dmabuf_reason(const VerbsOps* ops) const {
  if (!cuda_->mem_get_handle_for_address_range) {
    return cuda_->library + " has no cuMemGetHandleForAddressRange (CUDA driver before 11.7)";
  }
  if (!ops) return "no verbs provider";
  if (!ops->reg_dmabuf_mr) {
    return std::string("the ") + ops->provider +
           " provider has no ibv_reg_dmabuf_mr (rdma-core before 34)";
  }
  return "";
}

std::string IbGpuReg::no_peermem_reason(const IbConfig& config) const {
  if (!kPeermemBuilt) return "built with --without-nvidia-peermem";
  std::error_code ec;
  for (const char* module : {"nvidia_peermem", "nv_peer_mem"}) {
    if (std::filesystem::exists(config.sys_module + "/" + module, ec)) return "";
  }
  return "neither nvidia_peermem nor nv_peer_mem is loaded (" + config.sys_module + ")";
}

bool IbGpuReg::is_gpu(const void* address) const {
  if (!cuda_) return false;
  const auto ptr = reinterpret_cast<cu::DevicePtr>(address);
  unsigned type = 0, managed = 0;
  // Host memory the driver does not know gives CUDA_ERROR_INVALID_VALUE.
  if (cuda_->pointer_get_attribute(&type, cu::kPointerAttrMemoryType, ptr) != cu::kSuccess ||
      type != cu::kMemoryTypeDevice) {
    return false;
  }
  return cuda_->pointer_get_attribute(&managed, cu::kPointerAttrIsManaged, ptr) != cu::kSuccess ||
         managed == 0;
}

// A dma-buf covers whole pages: it is exported for the page-aligned span of
// the allocation (not of the range, so that registrations of pieces of one
// allocation export the same span), and the range is an offset in it.
Result<DmaBuf> IbGpuReg::export_dmabuf(uintptr_t start, size_t length, std::string* error) const {
  const auto ptr = static_cast<cu::DevicePtr>(start);
  cu::DevicePtr base = 0;
  size_t size = 0;
  cu::Result rc = cuda_->pointer_get_attribute(&base, cu::kPointerAttrRangeStart, ptr);
  if (rc == cu::kSuccess) rc = cuda_->pointer_get_attribute(&size, cu::kPointerAttrRangeSize, ptr);
  if (rc != cu::kSuccess) {
    *error = "cuPointerGetAttribute(RANGE_START_ADDR/RANGE_SIZE): " + cuda_->error_name(rc);
    return Status::IoError;
  }
  if (start < base || length > size || start - base > size - length) {
    *error = "the range leaves its GPU allocation of " + std::to_string(size) + " bytes";
    return Status::InvalidParam;
  }
  const auto page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  const uint64_t first = base & ~(page - 1);
  const uint64_t end = (base + size + page - 1) & ~(page - 1);
  int fd = -1;
  rc =
      cuda_->mem_get_handle_for_address_range(&fd, first, end - first, cu::kRangeHandleDmaBufFd, 0);
  if (rc != cu::kSuccess) {
    *error = "cuMemGetHandleForAddressRange(DMA_BUF_FD) of " + std::to_string(end - first) +
             " bytes: " + cuda_->error_name(rc);
    return Status::IoError;
  }
  return DmaBuf(fd, start - first);
}

}  // namespace mc::uct::ib
