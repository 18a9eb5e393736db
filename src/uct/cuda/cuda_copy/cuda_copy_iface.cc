// SPDX-License-Identifier: Apache-2.0
// cuda_copy iface: streams, events, bounce buffers and progress.
#include "uct/cuda/cuda_copy/cuda_copy_iface.h"

#include "ucs/log/log.h"
#include "uct/cuda/cuda_copy/cuda_copy_ep.h"

namespace mc::uct::cuda {

CudaCopyIface::CudaCopyIface(CudaCopyMd* md, const CudaCopyConfig& config)
    : Iface(md),
      md_(md),
      config_(config),
      self_addr_("cuda_copy", "it copies inside this process"),
      streams_(md->driver(), config.streams, config.max_outstanding, "cuda_copy") {}

Result<std::unique_ptr<Iface>> CudaCopyIface::create(CudaCopyMd* md, const CudaCopyConfig& config) {
  std::unique_ptr<CudaCopyIface> iface(new CudaCopyIface(md, config));
  ucs::MpoolParams params;
  params.elem_size = config.seg_size;
  params.alignment = 64;
  params.elems_per_chunk = std::min<size_t>(16, config.bounce_count);
  params.max_elems = config.bounce_count;
  params.name = "cuda_copy bounce";
  ucs::ChunkOps ops;
  const CuDriver* driver = &md->driver();
  // Pinned (page-locked, portable to every context) host memory, allocated
  // in the current device's primary context.
  ops.alloc = [driver](size_t bytes) -> Result<void*> {
    CtxScope scope(*driver, current_device(*driver));
    void* p = nullptr;
    const cu::Result e = scope.ok() ? driver->mem_alloc_host(&p, bytes) : scope.result();
    if (e != cu::kSuccess) {
      MC_LOG(error) << "cuda_copy: cuMemAllocHost(" << bytes
                    << ") for bounce buffers failed: " << driver->error_string(e);
      return Status::NoMemory;
    }
    return p;
  };
  ops.release = [driver](void* p, size_t) { (void)driver->mem_free_host(p); };
  MC_ASSIGN_OR_RETURN(iface->bounce_, ucs::Mpool::create(params, std::move(ops)));
  return std::unique_ptr<Iface>(std::move(iface));
}

CudaCopyIface::~CudaCopyIface() = default;

IfaceAttr CudaCopyIface::query() const {
  IfaceAttr attr;
  attr.cap =
      kCapPutShort | kCapPutBcopy | kCapPutZcopy | kCapGetBcopy | kCapGetZcopy | kCapConnectToSelf;
  attr.put = OpLimits{config_.seg_size, config_.seg_size, 0, SIZE_MAX, 16, 0};
  attr.get = OpLimits{0, config_.seg_size, 0, SIZE_MAX, 16, 0};
  attr.latency = LinearFunc{8e-6, 0};   // launch + event round trip
  attr.bandwidth = Bandwidth{0, 24e9};  // PCIe 4.0 x16 / 5.0 x16 effective
  attr.overhead = 3e-6;                 // cuMemcpyAsync + cuEventRecord
  attr.device_addr_len = SelfAddress::kAddrLen;
  attr.iface_addr_len = SelfAddress::kAddrLen;
  attr.access_mem_types = mem_type_bit(MemType::Host) | mem_type_bit(MemType::Cuda) |
                          mem_type_bit(MemType::CudaManaged);
  return attr;
}

std::vector<uint8_t> CudaCopyIface::device_address() const { return self_addr_.device_address(); }

std::vector<uint8_t> CudaCopyIface::iface_address() const { return self_addr_.iface_address(); }

bool CudaCopyIface::is_reachable(std::span<const uint8_t> device_addr,
                                 std::span<const uint8_t> iface_addr, std::string* reason) const {
  return self_addr_.is_reachable(device_addr, iface_addr, reason);
}

Result<std::unique_ptr<Endpoint>> CudaCopyIface::ep_create(std::span<const uint8_t> device_addr,
                                                           std::span<const uint8_t> iface_addr) {
  MC_RETURN_IF_ERROR(self_addr_.check_connect(device_addr, iface_addr));
  return std::unique_ptr<Endpoint>(new CudaCopyEp(this));
}

int CudaCopyIface::copy_device(const MemTypeInfo& a, const MemTypeInfo& b) const {
  if (a.device >= 0) return a.device;
  if (b.device >= 0) return b.device;
  return current_device(md_->driver());
}

Status CudaCopyIface::post(const std::vector<Piece>& pieces, int device, Done done) {
  auto ops = ops_;
  const Status s = streams_.post(pieces, device, [done = std::move(done), ops](Status st) {
    done(st);
    ops->done();
  });
  if (s == Status::InProgress) ++ops_->outstanding;
  return s;
}

unsigned CudaCopyIface::progress() { return streams_.progress(); }

}  // namespace mc::uct::cuda
