// SPDX-License-Identifier: Apache-2.0
// The verbs memory domain.
#include "uct/ib/base/ib_md.h"

#include <atomic>
#include <cerrno>
#include <cstring>
#include <system_error>
#include <thread>

#include "ucs/datastruct/wire.h"
#include "ucs/log/log.h"
#include "uct/base/rkey_codec.h"

namespace mc::uct::ib {

namespace {

constexpr size_t kMaxRkeyDevices = 16;
constexpr size_t kRkeyEntry = 8 + 4;  // u64 device GUID, u32 rkey

int ibv_access(unsigned access) {
  int a = IBV_ACCESS_LOCAL_WRITE;  // local: RDMA READ and RECV destinations
  if (access & kAccessRemoteRead) a |= IBV_ACCESS_REMOTE_READ;
  if (access & kAccessRemoteWrite) a |= IBV_ACCESS_REMOTE_WRITE;
  return a;
}

}  // namespace

Result<const VerbsOps*> verbs_ops_for(const IbConfig& config, std::string* why) {
  if (config.provider == Provider::Soft) {
    return verbs_ops_soft_library(config.soft_library, config.soft_fabric,
                                  static_cast<unsigned>(config.soft_devices), why);
  }
  return verbs_ops_libibverbs(why);
}

IbRegion::~IbRegion() {
  for (ibv_mr* mr : mrs) ops->dereg_mr(mr);
}

Result<uint32_t> IbRkey::for_device(uint64_t guid) const {
  for (const auto& [g, key] : keys) {
    if (g == guid) return key;
  }
  return Status::NoElem;
}

IbMd::IbMd(std::string name, const VerbsOps* ops, const IbConfig& config, std::string why,
           bool need_mlx5)
    : name_(std::move(name)), ops_(ops), config_(config), why_(std::move(why)), gpu_(config, ops) {
  if (ops_) devices_ = IbDevice::open_all(ops_, config_, &why_);
  if (need_mlx5 && !devices_.empty()) {
    std::string others;
    std::erase_if(devices_, [&](const std::unique_ptr<IbDevice>& d) {
      if (ops_->mlx5_supported && ops_->mlx5_supported(d->context()->device)) return false;
      others += (others.empty() ? "" : ", ") + d->name();
      return true;
    });
    if (devices_.empty()) {
      why_ = ops_->mlx5_supported
                 ? "no mlx5 devices: " + others + " do not support mlx5 direct verbs"
                 : std::string("no mlx5 devices: ") + ops_->mlx5_why;
    }
  }
  if (devices_.empty()) {
    MC_LOG_ONCE(info) << name_ << ": " << why_;
  }
  relaxed_ = config_.relaxed_ordering && ops_ && ops_->reg_mr_iova2;
  if (config_.relaxed_ordering && !relaxed_ && !devices_.empty()) {
    MC_LOG_ONCE(warn) << name_ << ": " << describe_relaxed_ordering();
  }
  MC_LOG(debug) << name_ << ": " << gpu_.describe();
}

std::string IbMd::describe_relaxed_ordering() const {
  if (relaxed_) {
    return "PCIe relaxed ordering: on for host memory (MC_IB_PCI_RELAXED_ORDERING=y, "
           "ibv_reg_mr_iova2)";
  }
  if (!config_.relaxed_ordering) return "PCIe relaxed ordering: off (MC_IB_PCI_RELAXED_ORDERING=n)";
  return "PCIe relaxed ordering: off although MC_IB_PCI_RELAXED_ORDERING=y: the verbs library "
         "has no ibv_reg_mr_iova2 (rdma-core 28 or later has it)";
}

MdAttr IbMd::query() const {
  MdAttr attr;
  attr.flags = kMdReg | kMdNeedRkey;
  attr.reg_mem_types = mem_type_bit(MemType::Host);
  if (gpu_.path() != IbGpuReg::Path::None) attr.reg_mem_types |= mem_type_bit(MemType::Cuda);
  attr.access_mem_types = attr.reg_mem_types;  // the NIC reaches what it registered
  attr.notes.push_back(gpu_.describe());
  attr.notes.push_back(describe_relaxed_ordering());
  attr.reg_cost = LinearFunc{16e-6, 0.06e-9};  // pinning dominates: per call and per page
  attr.max_reg = devices_.empty() ? 0 : devices_[0]->device_attr().max_mr_size;
  attr.rkey_packed_size =
      rkey_envelope_size(name_) + 1 + kRkeyEntry * std::max<size_t>(1, devices_.size());
  return attr;
}

std::vector<TlResource> IbMd::query_tl_resources() const {
  std::vector<TlResource> out;
  for (const auto& d : devices_) {
    out.push_back(TlResource{tl_name(), d->tl_dev_name(), DeviceType::Net, d->numa_node()});
  }
  return out;
}

int IbMd::find_device(const std::string& dev_name) const {
  for (size_t i = 0; i < devices_.size(); ++i) {
    if (devices_[i]->tl_dev_name() == dev_name) return static_cast<int>(i);
  }
  return -1;
}

// A live region is shared when it is the same range with the same access,
// or, for purely local use, any region that covers the range: a remote
// peer must never gain a wider window than the one registered for it. Only
// regions of the same memory type are shared.
std::shared_ptr<IbRegion> IbMd::region_get(uintptr_t start, size_t length, int access,
                                           MemType type) {
  const bool remote = access & (IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE);
  for (auto it = regions_.begin(); it != regions_.end() && it->first <= start;) {
    std::shared_ptr<IbRegion> r = it->second.lock();
    if (!r) {
      it = regions_.erase(it);
      continue;
    }
    const bool exact = r->start == start && r->length == length && r->access == access;
    const bool covers =
        !remote && start - r->start <= r->length && length <= r->length - (start - r->start);
    if ((exact || covers) && r->mem_type == type) return r;
    ++it;
  }
  return nullptr;
}

Result<std::optional<DmaBuf>> IbMd::gpu_dmabuf(uintptr_t start, size_t length) {
  if (gpu_.path() == IbGpuReg::Path::PeerMem) return std::optional<DmaBuf>();
  std::string error;
  Result<DmaBuf> buf = gpu_.export_dmabuf(start, length, &error);
  if (buf.ok()) return std::optional<DmaBuf>(std::move(*buf));
  if (gpu_.peermem_fallback() && buf.status() != Status::InvalidParam) {
    MC_LOG_ONCE(warn) << name_ << ": GPU memory at 0x" << std::hex << start << std::dec
                      << " has no dma-buf (" << error << "); registering through peer memory";
    return std::optional<DmaBuf>();
  }
  MC_LOG(error) << name_ << ": cannot register " << length << " bytes of GPU memory at 0x"
                << std::hex << start << std::dec << ": " << error;
  return buf.status();
}

Result<std::shared_ptr<IbRegion>> IbMd::region_reg(uintptr_t start, size_t length, int access,
                                                   MemType type) {
  auto region = std::make_shared<IbRegion>();
  region->start = start;
  region->length = length;
  region->access = access;
  region->mem_type = type;
  region->ops = ops_;
  std::optional<DmaBuf> dmabuf;
  if (type == MemType::Cuda) {
    MC_ASSIGN_OR_RETURN(dmabuf, gpu_dmabuf(start, length));
  }
  // The dma-buf fd is only needed while registering: it closes on return.
  const char* call = dmabuf ? "ibv_reg_dmabuf_mr" : relaxed_ ? "ibv_reg_mr_iova2" : "ibv_reg_mr";
  for (const auto& d : devices_) {
    // Relaxed ordering is an optional flag: only ibv_reg_mr_iova2 takes it.
    ibv_mr* mr =
        dmabuf ? ops_->reg_dmabuf_mr(d->pd(), dmabuf->offset(), length, start, dmabuf->fd(), access)
        : relaxed_ ? ops_->reg_mr_iova2(d->pd(), reinterpret_cast<void*>(start), length, start,
                                        static_cast<unsigned>(access | IBV_ACCESS_RELAXED_ORDERING))
                   : ops_->reg_mr(d->pd(), reinterpret_cast<void*>(start), length, access);
    if (!mr) {
      // The MRs already made go with `region`.
      const int err = errno;
      MC_LOG(error) << name_ << ": " << call << " of " << length << " bytes"
                    << (type == MemType::Cuda ? " of GPU memory" : "") << " at 0x" << std::hex
                    << start << std::dec << " on " << d->name() << ": " << std::strerror(err);
      return err == ENOMEM ? Status::NoMemory : Status::IoError;
    }
    region->mrs.push_back(mr);
  }
  return region;
}

Result<std::unique_ptr<MemHandle>> IbMd::mem_reg(void* address, size_t length, unsigned access) {
  if (!address || length == 0) {
    MC_LOG(error) << name_ << ": cannot register " << length << " bytes at " << address;
    return Status::InvalidParam;
  }
  if (devices_.empty()) {
    MC_LOG(error) << name_ << ": cannot register memory: " << why_;
    return Status::NoDevice;
  }
  const auto start = reinterpret_cast<uintptr_t>(address);
  const int a = ibv_access(access);
  const MemType type = gpu_.is_gpu(address) ? MemType::Cuda : MemType::Host;
  if (type == MemType::Cuda && gpu_.path() == IbGpuReg::Path::None) {
    MC_LOG(error) << name_ << ": cannot register " << length << " bytes of GPU memory at "
                  << address << ": " << gpu_.describe();
    return Status::Unsupported;
  }
  std::shared_ptr<IbRegion> region;
  {
    std::lock_guard guard(lock_);
    region = region_get(start, length, a, type);
  }
  if (!region) {
    // Registered without the lock, so that a batch pins its buffers in
    // parallel; a region another thread registered meanwhile wins, and
    // ours is deregistered as it goes.
    MC_ASSIGN_OR_RETURN(std::shared_ptr<IbRegion> fresh, region_reg(start, length, a, type));
    std::lock_guard guard(lock_);
    region = region_get(start, length, a, type);
    if (!region) {
      regions_.emplace(start, fresh);
      region = std::move(fresh);
    }
  }
  return std::unique_ptr<MemHandle>(new IbMemHandle(address, length, access, std::move(region)));
}

std::vector<Result<std::unique_ptr<MemHandle>>> IbMd::mem_reg_batch(
    std::span<const MemRegRequest> reqs) {
  const size_t threads = std::min<size_t>(config_.reg_threads, reqs.size());
  if (threads <= 1) return MemoryDomain::mem_reg_batch(reqs);
  std::vector<Result<std::unique_ptr<MemHandle>>> out;
  out.reserve(reqs.size());
  for (size_t i = 0; i < reqs.size(); ++i) out.emplace_back(Status::InProgress);
  // Each worker takes the next index; every slot of `out` is written by
  // exactly one worker, and read only after all are joined.
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < reqs.size();) {
      out[i] = mem_reg(reqs[i].address, reqs[i].length, reqs[i].access);
    }
  };
  std::vector<std::thread> pool;
  pool.reserve(threads - 1);
  for (size_t t = 1; t < threads; ++t) {
    try {
      pool.emplace_back(work);
    } catch (const std::system_error& e) {
      MC_LOG(warn) << name_ << ": batch registration on " << t << " threads: " << e.what();
      break;  // fewer threads: the rest of the work is shared by those running
    }
  }
  work();
  for (std::thread& t : pool) t.join();
  return out;
}

// Payload: u8 device count | count x (u64 device GUID | u32 rkey)  (little-endian)
Status IbMd::mkey_pack(const MemHandle& memh, std::vector<uint8_t>* out) const {
  const auto* h = dynamic_cast<const IbMemHandle*>(&memh);
  if (!h) {
    MC_LOG(error) << name_ << ": mkey_pack of a handle from another memory domain";
    return Status::InvalidParam;
  }
  if (!(h->access() & kAccessRemote)) {
    MC_LOG(error) << name_ << ": mkey_pack of a registration without remote access";
    return Status::InvalidParam;
  }
  std::vector<uint8_t> payload;
  ucs::WireWriter w(&payload);
  w.u8(static_cast<uint8_t>(devices_.size()));
  for (size_t i = 0; i < devices_.size(); ++i) {
    w.u64(devices_[i]->guid());
    w.u32(h->region().mrs[i]->rkey);
  }
  rkey_pack_envelope(name_, payload, out);
  return Status::Ok;
}

Result<std::unique_ptr<Rkey>> IbMd::rkey_unpack(std::span<const uint8_t> packed) const {
  MC_ASSIGN_OR_RETURN(std::span<const uint8_t> payload, rkey_unpack_envelope(name_, packed));
  ucs::WireReader r(payload);
  const size_t count = r.u8();
  auto key = std::make_unique<IbRkey>();
  for (size_t i = 0; i < count && r.ok(); ++i) {
    const uint64_t guid = r.u64();
    const uint32_t rkey = r.u32();
    key->keys.emplace_back(guid, rkey);
  }
  if (count == 0 || count > kMaxRkeyDevices || !r.at_end()) {
    MC_LOG(error) << name_ << ": malformed rkey payload (" << payload.size() << " bytes, " << count
                  << " devices)";
    return Status::InvalidParam;
  }
  return std::unique_ptr<Rkey>(std::move(key));
}

}  // namespace mc::uct::ib
