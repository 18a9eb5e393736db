// SPDX-License-Identifier: Apache-2.0
// cuda_copy iface: streams, events, bounce buffers and progress.
#include "uct/cuda/cuda_copy/cuda_copy_iface.h"

#include "ucs/log/log.h"
#include "uct/cuda/cuda_copy/cuda_copy_ep.h"

namespace mc::uct::cuda {

namespace {

// Makes `device` current for the scope, restoring the previous one.
class DeviceScope {
 public:
  explicit DeviceScope(int device) {
    if (cudaGetDevice(&prev_) == cudaSuccess && prev_ != device) {
      ok_ = cudaSetDevice(device) == cudaSuccess;
      switched_ = ok_;
    }
  }
  ~DeviceScope() {
    if (switched_) (void)cudaSetDevice(prev_);
  }
  bool ok() const { return ok_; }

 private:
  int prev_ = 0;
  bool ok_ = true;
  bool switched_ = false;
};

}  // namespace

CudaCopyIface::CudaCopyIface(CudaCopyMd* md, const CudaCopyConfig& config)
    : Iface(md), md_(md), config_(config), self_addr_("cuda_copy", "it copies inside this process") {}

Result<std::unique_ptr<Iface>> CudaCopyIface::create(CudaCopyMd* md, const CudaCopyConfig& config) {
  std::unique_ptr<CudaCopyIface> iface(new CudaCopyIface(md, config));
  ucs::MpoolParams params;
  params.elem_size = config.seg_size;
  params.alignment = 64;
  params.elems_per_chunk = std::min<size_t>(16, config.bounce_count);
  params.max_elems = config.bounce_count;
  params.name = "cuda_copy bounce";
  ucs::ChunkOps ops;
  ops.alloc = [](size_t bytes) -> Result<void*> {
    void* p = nullptr;
    const cudaError_t e = cudaMallocHost(&p, bytes);
    if (e != cudaSuccess) {
      MC_LOG(error) << "cuda_copy: cudaMallocHost(" << bytes
                    << ") for bounce buffers failed: " << cuda_error_string(e);
      return Status::NoMemory;
    }
    return p;
  };
  ops.release = [](void* p, size_t) { (void)cudaFreeHost(p); };
  MC_ASSIGN_OR_RETURN(iface->bounce_, ucs::Mpool::create(params, std::move(ops)));
  return std::unique_ptr<Iface>(std::move(iface));
}

CudaCopyIface::~CudaCopyIface() {
  if (in_flight_ > 0) {
    MC_LOG(warn) << "cuda_copy: iface closed with " << in_flight_
                 << " copies in flight; waiting for them, their completions are dropped";
  }
  for (auto& [device, d] : devices_) {
    DeviceScope scope(device);
    for (StreamQueue& q : d.queues) {
      (void)cudaStreamSynchronize(q.stream);
      for (Op& op : q.ops) (void)cudaEventDestroy(op.event);
      (void)cudaStreamDestroy(q.stream);
    }
    for (cudaEvent_t e : d.free_events) (void)cudaEventDestroy(e);
  }
}

IfaceAttr CudaCopyIface::query() const {
  IfaceAttr attr;
  attr.cap =
      kCapPutShort | kCapPutBcopy | kCapPutZcopy | kCapGetBcopy | kCapGetZcopy | kCapConnectToSelf;
  attr.put = OpLimits{config_.seg_size, config_.seg_size, 0, SIZE_MAX, 16, 0};
  attr.get = OpLimits{0, config_.seg_size, 0, SIZE_MAX, 16, 0};
  attr.latency = LinearFunc{8e-6, 0};   // launch + event round trip
  attr.bandwidth = Bandwidth{0, 24e9};  // PCIe 4.0 x16 / 5.0 x16 effective
  attr.overhead = 3e-6;                 // cudaMemcpyAsync + cudaEventRecord
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
  int current = 0;
  return cudaGetDevice(&current) == cudaSuccess ? current : 0;
}

Result<CudaCopyIface::DeviceStreams*> CudaCopyIface::streams_of(int device) {
  auto it = devices_.find(device);
  if (it != devices_.end()) return &it->second;
  DeviceStreams d;
  for (uint64_t i = 0; i < config_.streams; ++i) {
    StreamQueue q;
    const cudaError_t e = cudaStreamCreateWithFlags(&q.stream, cudaStreamNonBlocking);
    if (e != cudaSuccess) {
      MC_LOG(error) << "cuda_copy: cudaStreamCreate on device " << device
                    << " failed: " << cuda_error_string(e);
      for (StreamQueue& made : d.queues) (void)cudaStreamDestroy(made.stream);
      return Status::NoResource;
    }
    d.queues.push_back(std::move(q));
  }
  return &devices_.emplace(device, std::move(d)).first->second;
}

Result<cudaEvent_t> CudaCopyIface::event_get(DeviceStreams& d) {
  if (!d.free_events.empty()) {
    cudaEvent_t e = d.free_events.back();
    d.free_events.pop_back();
    return e;
  }
  cudaEvent_t e = nullptr;
  const cudaError_t rc = cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
  if (rc != cudaSuccess) {
    MC_LOG(error) << "cuda_copy: cudaEventCreate failed: " << cuda_error_string(rc);
    return Status::NoResource;
  }
  return e;
}

Status CudaCopyIface::post(const std::vector<Piece>& pieces, int device, Done done) {
  if (!has_room()) return Status::NoResource;
  DeviceScope scope(device);
  if (!scope.ok()) {
    MC_LOG(error) << "cuda_copy: cannot make device " << device << " current";
    return Status::NoDevice;
  }
  MC_ASSIGN_OR_RETURN(DeviceStreams * d, streams_of(device));
  MC_ASSIGN_OR_RETURN(cudaEvent_t event, event_get(*d));
  StreamQueue& q = d->queues[d->next++ % d->queues.size()];
  Status status = Status::Ok;
  for (const Piece& p : pieces) {
    if (p.length == 0) continue;
    const cudaError_t e = cudaMemcpyAsync(p.dst, p.src, p.length, cudaMemcpyDefault, q.stream);
    if (e != cudaSuccess) {
      MC_LOG(error) << "cuda_copy: cudaMemcpyAsync of " << p.length << " bytes " << p.src << " -> "
                    << p.dst << " failed: " << cuda_error_string(e);
      status = Status::IoError;
      break;
    }
  }
  const cudaError_t rec = cudaEventRecord(event, q.stream);
  if (rec != cudaSuccess) {
    MC_LOG(error) << "cuda_copy: cudaEventRecord failed: " << cuda_error_string(rec);
    // Nothing to poll: wait here so the memory is not reused while copying.
    (void)cudaStreamSynchronize(q.stream);
    d->free_events.push_back(event);
    return Status::IoError;
  }
  if (status != Status::Ok) {
    done = [done = std::move(done), status](Status) { done(status); };
  }
  q.ops.push_back(Op{event, device, std::move(done)});
  ++in_flight_;
  ++ops_->outstanding;
  return Status::InProgress;
}

unsigned CudaCopyIface::progress_queue(DeviceStreams& d, StreamQueue& q) {
  unsigned events = 0;
  while (!q.ops.empty()) {
    const cudaError_t e = cudaEventQuery(q.ops.front().event);
    if (e == cudaErrorNotReady) break;
    Op op = std::move(q.ops.front());
    q.ops.pop_front();
    Status s = Status::Ok;
    if (e != cudaSuccess) {
      MC_LOG(error) << "cuda_copy: a copy on device " << op.device
                    << " failed: " << cuda_error_string(e);
      s = Status::IoError;
    }
    d.free_events.push_back(op.event);
    --in_flight_;
    op.done(s);  // may post more copies on this queue
    ops_->done();
    ++events;
  }
  return events;
}

unsigned CudaCopyIface::progress() {
  unsigned events = 0;
  for (auto& [device, d] : devices_) {
    for (StreamQueue& q : d.queues) events += progress_queue(d, q);
  }
  return events;
}

}  // namespace mc::uct::cuda
