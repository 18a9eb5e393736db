// SPDX-License-Identifier: Apache-2.0
// The fake GPU: md (allocations, registrations, keys), iface (a queue of
// copies run by progress()) and endpoint (put/get zcopy to itself).
#include "ucp/fake_gpu.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>

#include "ucp/api/context.h"
#include "uct/api/ep.h"
#include "uct/api/iface.h"
#include "uct/api/md.h"

namespace mc::ucp::test {

namespace {

using ucs::Result;
using ucs::Status;
using uct::MemType;

constexpr uct::MemTypeMask kHostCuda =
    uct::mem_type_bit(MemType::Host) | uct::mem_type_bit(MemType::Cuda);

class FakeMd;

class FakeMemHandle : public uct::MemHandle {
 public:
  FakeMemHandle(FakeMd* md, uint64_t id, void* addr, size_t len, unsigned access, MemType type,
                bool owns)
      : uct::MemHandle(addr, len, access, type), md_(md), id_(id), owns_(owns) {}
  ~FakeMemHandle() override;
  uint64_t id() const { return id_; }

 private:
  FakeMd* md_;
  uint64_t id_;
  bool owns_;  ///< an allocation: freed with the handle
};

struct FakeRkey : uct::Rkey {
  uint64_t id = 0;
  uint64_t base = 0;
  uint64_t length = 0;
};

struct Region {
  uintptr_t base;
  size_t length;
  bool device;
};

class FakeIface;

class FakeMd : public uct::MemoryDomain {
 public:
  const std::string& name() const override { return name_; }
  uct::MdAttr query() const override {
    uct::MdAttr a;
    a.flags = uct::kMdReg | uct::kMdAlloc | uct::kMdNeedRkey;
    a.reg_mem_types = kHostCuda;
    a.access_mem_types = kHostCuda;
    a.alloc_mem_types = uct::mem_type_bit(MemType::Cuda);
    a.detect_mem_types = uct::mem_type_bit(MemType::Cuda);
    a.reg_cost = uct::LinearFunc{1e-6, 0};
    a.max_alloc = SIZE_MAX;
    a.rkey_packed_size = 24;
    return a;
  }
  std::vector<uct::TlResource> query_tl_resources() const override {
    return {uct::TlResource{kFakeGpuTl, "gpu0", uct::DeviceType::Acc, -1}};
  }
  Result<std::unique_ptr<uct::Iface>> iface_open(const uct::IfaceParams& params) override;
  Result<std::unique_ptr<uct::MemHandle>> mem_reg(void* address, size_t length,
                                                  unsigned access) override {
    if (!address || length == 0) return Status::InvalidParam;
    const MemType t = detect_mem_type(address, length);
    return std::unique_ptr<uct::MemHandle>(
        new FakeMemHandle(this, add(address, length, false), address, length, access, t, false));
  }
  Result<std::unique_ptr<uct::MemHandle>> mem_alloc(size_t length, MemType type,
                                                    unsigned access) override {
    if (type != MemType::Cuda || length == 0) return Status::Unsupported;
    void* p = std::malloc(length);
    if (!p) return Status::NoMemory;
    return std::unique_ptr<uct::MemHandle>(
        new FakeMemHandle(this, add(p, length, true), p, length, access, MemType::Cuda, true));
  }
  Status mkey_pack(const uct::MemHandle& memh, std::vector<uint8_t>* out) const override {
    const auto* h = dynamic_cast<const FakeMemHandle*>(&memh);
    if (!h) return Status::InvalidParam;
    const uint64_t v[3] = {h->id(), reinterpret_cast<uintptr_t>(h->address()), h->length()};
    const auto* b = reinterpret_cast<const uint8_t*>(v);
    out->insert(out->end(), b, b + sizeof(v));
    return Status::Ok;
  }
  Result<std::unique_ptr<uct::Rkey>> rkey_unpack(std::span<const uint8_t> packed) const override {
    if (packed.size() != 24) return Status::InvalidParam;
    uint64_t v[3];
    std::memcpy(v, packed.data(), sizeof(v));
    auto k = std::make_unique<FakeRkey>();
    k->id = v[0];
    k->base = v[1];
    k->length = v[2];
    return std::unique_ptr<uct::Rkey>(std::move(k));
  }
  MemType detect_mem_type(const void* address, size_t length) const override {
    std::lock_guard g(lock_);
    const auto a = reinterpret_cast<uintptr_t>(address);
    for (const auto& [id, r] : regions_) {
      if (r.device && a >= r.base && a - r.base + length <= r.length) return MemType::Cuda;
    }
    return MemType::Host;
  }
  /// Whether [addr, +len) lies in a registration with key `k`.
  bool check(const FakeRkey& k, uint64_t addr, size_t len) const {
    std::lock_guard g(lock_);
    auto it = regions_.find(k.id);
    return it != regions_.end() && addr >= it->second.base &&
           addr - it->second.base + len <= it->second.length;
  }
  void forget(uint64_t id) {
    std::lock_guard g(lock_);
    regions_.erase(id);
  }

 private:
  uint64_t add(void* p, size_t len, bool device) {
    std::lock_guard g(lock_);
    // A registration of device memory is device memory too.
    const MemType t = device ? MemType::Cuda : MemType::Host;
    bool dev = t == MemType::Cuda;
    const auto a = reinterpret_cast<uintptr_t>(p);
    for (const auto& [id, r] : regions_) {
      if (r.device && a >= r.base && a - r.base + len <= r.length) dev = true;
    }
    regions_[next_id_] = Region{a, len, dev};
    return next_id_++;
  }

  std::string name_ = "fake_gpu";
  mutable std::mutex lock_;
  std::map<uint64_t, Region> regions_;
  uint64_t next_id_ = 1;
};

FakeMemHandle::~FakeMemHandle() {
  md_->forget(id_);
  if (owns_) std::free(address());
}

struct Copy {
  void* dst;
  const void* src;
  size_t length;
  Status status;
  uct::Completion* comp;
};

class FakeIface : public uct::Iface {
 public:
  explicit FakeIface(FakeMd* md) : uct::Iface(md), md_(md) {}
  uct::IfaceAttr query() const override {
    uct::IfaceAttr a;
    a.cap = uct::kCapPutZcopy | uct::kCapGetZcopy | uct::kCapConnectToSelf;
    a.put = uct::OpLimits{0, 0, 0, SIZE_MAX, 1, 0};
    a.get = uct::OpLimits{0, 0, 0, SIZE_MAX, 1, 0};
    a.latency = uct::LinearFunc{8e-6, 0};
    a.bandwidth = uct::Bandwidth{0, 24e9};
    a.overhead = 3e-6;
    a.device_addr_len = 8;
    a.iface_addr_len = 8;
    a.access_mem_types = kHostCuda;
    return a;
  }
  unsigned progress() override {
    // Only what was queued before this call: a completion that posts the
    // next copy sees it complete at a later progress, as a GPU would. A
    // failed copy ends the call: the copies queued after it are still in
    // flight when its owner learns of the failure.
    size_t n = queue_.size();
    unsigned events = 0;
    while (n-- > 0) {
      Copy c = queue_.front();
      queue_.pop_front();
      if (c.status == Status::Ok) {
        std::memcpy(c.dst, c.src, c.length);
        fake_gpu_state().copied_bytes += c.length;
      }
      ++fake_gpu_state().completed;
      uct::completion_update(c.comp, c.status);
      ++events;
      if (c.status != Status::Ok) break;
    }
    return events;
  }
  std::vector<uint8_t> device_address() const override { return bytes(uint64_t(getpid())); }
  std::vector<uint8_t> iface_address() const override {
    return bytes(reinterpret_cast<uintptr_t>(this));
  }
  bool is_reachable(std::span<const uint8_t> dev, std::span<const uint8_t> iface,
                    std::string* reason) const override {
    if (std::vector<uint8_t>(dev.begin(), dev.end()) == device_address() &&
        std::vector<uint8_t>(iface.begin(), iface.end()) == iface_address()) {
      return true;
    }
    if (reason) *reason = "fake_cuda_copy connects only to its own iface";
    return false;
  }
  Result<std::unique_ptr<uct::Endpoint>> ep_create(std::span<const uint8_t> dev,
                                                   std::span<const uint8_t> iface) override;
  Status flush(uct::Completion*) override {
    while (!queue_.empty()) progress();
    return Status::Ok;
  }

  Status copy(bool put, const uct::Iov* iov, size_t count, uint64_t remote_addr,
              const uct::Rkey& rkey, uct::Completion* comp) {
    const auto* k = dynamic_cast<const FakeRkey*>(&rkey);
    const size_t len = uct::iov_length(iov, count);
    if (count != 1 || !k || !md_->check(*k, remote_addr, len)) return Status::InvalidParam;
    if (len == 0) return Status::Ok;
    FakeGpuState& st = fake_gpu_state();
    ++st.copies;
    Status status = Status::Ok;
    if (st.fault != FakeGpuFault::None && st.copies == st.fault_at) {
      if (st.fault == FakeGpuFault::Post) return Status::IoError;
      status = Status::IoError;
    }
    void* remote = reinterpret_cast<void*>(remote_addr);
    queue_.push_back(put ? Copy{remote, iov[0].buffer, len, status, comp}
                         : Copy{iov[0].buffer, remote, len, status, comp});
    st.max_queued = std::max(st.max_queued, queue_.size());
    return Status::InProgress;
  }

 private:
  static std::vector<uint8_t> bytes(uint64_t v) {
    const auto* b = reinterpret_cast<const uint8_t*>(&v);
    return std::vector<uint8_t>(b, b + sizeof(v));
  }

  FakeMd* md_;
  std::deque<Copy> queue_;
};

class FakeEp : public uct::Endpoint {
 public:
  explicit FakeEp(FakeIface* iface) : iface_(iface) {}
  Status put_zcopy(const uct::Iov* iov, size_t count, uint64_t remote_addr, const uct::Rkey& rkey,
                   uct::Completion* comp) override {
    return iface_->copy(true, iov, count, remote_addr, rkey, comp);
  }
  Status get_zcopy(const uct::Iov* iov, size_t count, uint64_t remote_addr, const uct::Rkey& rkey,
                   uct::Completion* comp) override {
    return iface_->copy(false, iov, count, remote_addr, rkey, comp);
  }
  Status flush(uct::Completion* comp) override { return iface_->flush(comp); }

 private:
  FakeIface* iface_;
};

Result<std::unique_ptr<uct::Iface>> FakeMd::iface_open(const uct::IfaceParams& params) {
  if (params.dev_name != "gpu0") return Status::NoDevice;
  return std::unique_ptr<uct::Iface>(new FakeIface(this));
}

Result<std::unique_ptr<uct::Endpoint>> FakeIface::ep_create(std::span<const uint8_t> dev,
                                                            std::span<const uint8_t> iface) {
  if (!is_reachable(dev, iface, nullptr)) return Status::Unreachable;
  return std::unique_ptr<uct::Endpoint>(new FakeEp(this));
}

class FakeComponent : public uct::Component {
 public:
  const std::string& name() const override { return name_; }
  std::vector<std::string> md_names() const override { return {"fake_gpu"}; }
  Result<std::unique_ptr<uct::MemoryDomain>> md_open(const std::string& md_name,
                                                     const ucs::config::Sources&) override {
    if (md_name != "fake_gpu") return Status::NoElem;
    return std::unique_ptr<uct::MemoryDomain>(new FakeMd());
  }
  void register_config(ucs::config::Registry&) const override {}

 private:
  std::string name_ = "fake_gpu";
};

}  // namespace

FakeGpuState& fake_gpu_state() {
  static FakeGpuState state;
  return state;
}

std::unique_ptr<FakeVram> FakeVram::alloc(size_t length) {
  ucs::Result<ucs::config::Sources> sources = ucs::config::Sources::from_process();
  if (!sources.ok()) return nullptr;
  ucs::Result<std::unique_ptr<uct::MemoryDomain>> md =
      fake_gpu_component()->md_open("fake_gpu", *sources);
  if (!md.ok()) return nullptr;
  std::unique_ptr<FakeVram> v(new FakeVram());
  v->md_ = std::move(*md);
  ucs::Result<std::unique_ptr<uct::MemHandle>> mem =
      v->md_->mem_alloc(length, uct::MemType::Cuda, uct::kAccessAll);
  if (!mem.ok()) return nullptr;
  v->mem_ = std::move(*mem);
  return v;
}

std::unique_ptr<uct::MemHandle> fake_vram(Context& ctx, size_t n) {
  for (const MdEntry& md : ctx.mds()) {
    if (md.name != "fake_gpu") continue;
    ucs::Result<std::unique_ptr<uct::MemHandle>> h =
        md.md->mem_alloc(n, uct::MemType::Cuda, uct::kAccessAll);
    return h.ok() ? std::move(*h) : nullptr;
  }
  return nullptr;
}

uct::Component* fake_gpu_component() {
  static FakeComponent component;
  return &component;
}

}  // namespace mc::ucp::test
