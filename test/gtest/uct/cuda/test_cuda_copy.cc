// SPDX-License-Identifier: Apache-2.0
// cuda_copy through the UCT API, loaded as a module. Without a GPU (or a
// driver) only the no-device report is checked and the rest is skipped with
// the reason; test/gpu/run.sh runs everything on a machine with a GPU.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <numeric>
#include <vector>

#include "ucs/config/sources.h"
#include "uct/api/ep.h"
#include "uct/api/iface.h"
#include "uct/base/component_loader.h"

namespace mc::uct::cuda {
namespace {

struct Done {
  Done() {
    comp.arg = this;
    comp.func = [](Completion* c) { static_cast<Done*>(c->arg)->fired = true; };
  }
  Completion comp;
  bool fired = false;
};

std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(i * 7 + seed + (i >> 9));
  return v;
}

// Device memory freed by cudaFree.
struct DeviceBuffer {
  explicit DeviceBuffer(size_t n) : size(n) { ok = cudaMalloc(&ptr, n) == cudaSuccess; }
  ~DeviceBuffer() {
    if (ok) (void)cudaFree(ptr);
  }
  std::vector<uint8_t> read() const {
    std::vector<uint8_t> v(size);
    EXPECT_EQ(cudaMemcpy(v.data(), ptr, size, cudaMemcpyDeviceToHost), cudaSuccess);
    return v;
  }
  void* ptr = nullptr;
  size_t size;
  bool ok = false;
};

TEST(CudaCopyComponent, ReportsItsDevicesOrWhyThereAreNone) {
  Component* comp = find_component("cuda_copy");
  ASSERT_NE(comp, nullptr) << "libmc_uct_cuda.so was not loaded (see mc_info -m)";
  int count = 0;
  const bool have_gpu = cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
  (void)cudaGetLastError();
  if (have_gpu) {
    EXPECT_EQ(comp->md_names(), std::vector<std::string>{"cuda_copy"});
    EXPECT_EQ(comp->unavailable_reason(), "");
  } else {
    EXPECT_TRUE(comp->md_names().empty());
    EXPECT_EQ(comp->unavailable_reason().rfind("no CUDA device: ", 0), 0u)
        << comp->unavailable_reason();
    auto md = comp->md_open("cuda_copy", *ucs::config::Sources::from({}, {}));
    EXPECT_EQ(md.status(), Status::NoDevice);
  }
}

class CudaCopyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Component* comp = find_component("cuda_copy");
    ASSERT_NE(comp, nullptr) << "libmc_uct_cuda.so was not loaded (see mc_info -m)";
    if (comp->md_names().empty()) GTEST_SKIP() << comp->unavailable_reason();
    auto md = comp->md_open("cuda_copy", *ucs::config::Sources::from({}, {}));
    ASSERT_TRUE(md.ok());
    md_ = std::move(*md);
    IfaceParams params;
    params.tl_name = "cuda_copy";
    params.dev_name = "cuda";
    auto iface = md_->iface_open(params);
    ASSERT_TRUE(iface.ok());
    iface_ = std::move(*iface);
    auto ep = iface_->ep_create(iface_->device_address(), iface_->iface_address());
    ASSERT_TRUE(ep.ok());
    ep_ = std::move(*ep);
  }

  std::unique_ptr<Rkey> rkey_of(void* p, size_t n, std::unique_ptr<MemHandle>* memh) {
    auto h = md_->mem_reg(p, n, kAccessAll);
    EXPECT_TRUE(h.ok());
    if (!h.ok()) return nullptr;
    std::vector<uint8_t> packed;
    EXPECT_EQ(md_->mkey_pack(**h, &packed), Status::Ok);
    auto r = md_->rkey_unpack(packed);
    *memh = std::move(*h);
    return r.ok() ? std::move(*r) : nullptr;
  }

  Status wait(Status posted, Done& d) {
    if (posted != Status::InProgress) return posted;
    for (long spins = 0; !d.fired && spins < 100000000; ++spins) iface_->progress();
    EXPECT_TRUE(d.fired);
    return d.comp.status;
  }

  Status zcopy(bool put, void* local, size_t n, void* remote, const Rkey& rkey) {
    Iov iov{local, n, nullptr};
    Done d;
    const auto addr = reinterpret_cast<uint64_t>(remote);
    return wait(put ? ep_->put_zcopy(&iov, 1, addr, rkey, &d.comp)
                    : ep_->get_zcopy(&iov, 1, addr, rkey, &d.comp),
                d);
  }

  std::unique_ptr<MemoryDomain> md_;
  std::unique_ptr<Iface> iface_;
  std::unique_ptr<Endpoint> ep_;
};

TEST_F(CudaCopyTest, DetectsDeviceManagedPinnedAndPageableMemory) {
  DeviceBuffer dev(1 << 20);
  ASSERT_TRUE(dev.ok);
  void* managed = nullptr;
  void* pinned = nullptr;
  ASSERT_EQ(cudaMallocManaged(&managed, 4096), cudaSuccess);
  ASSERT_EQ(cudaMallocHost(&pinned, 4096), cudaSuccess);
  std::vector<uint8_t> pageable(4096);
  EXPECT_EQ(md_->detect_mem_type(dev.ptr, dev.size), MemType::Cuda);
  EXPECT_EQ(md_->detect_mem_type(static_cast<char*>(dev.ptr) + 4096, 16), MemType::Cuda);
  EXPECT_EQ(md_->detect_mem_type(managed, 4096), MemType::CudaManaged);
  EXPECT_EQ(md_->detect_mem_type(pinned, 4096), MemType::Host);
  EXPECT_EQ(md_->detect_mem_type(pageable.data(), 4096), MemType::Host);
  (void)cudaFree(managed);
  (void)cudaFreeHost(pinned);
}

TEST_F(CudaCopyTest, RegistrationCachesTheTypeUntilUnregistered) {
  void* dev = nullptr;
  ASSERT_EQ(cudaMalloc(&dev, 1 << 20), cudaSuccess);
  std::unique_ptr<MemHandle> h;
  ASSERT_TRUE(rkey_of(dev, 1 << 20, &h));
  EXPECT_EQ(h->mem_type(), MemType::Cuda);
  EXPECT_EQ(md_->detect_mem_type(dev, 1 << 20), MemType::Cuda);
  h.reset();
  ASSERT_EQ(cudaFree(dev), cudaSuccess);
  // A stale cache entry would still say Cuda for memory that is gone.
  EXPECT_NE(md_->detect_mem_type(dev, 1 << 20), MemType::Cuda);
}

TEST_F(CudaCopyTest, HostRegistrationPinsAndUnregistrationUnpins) {
  std::vector<uint8_t> host(1 << 20);
  auto h = md_->mem_reg(host.data(), host.size(), kAccessAll);
  ASSERT_TRUE(h.ok());
  cudaPointerAttributes attr{};
  ASSERT_EQ(cudaPointerGetAttributes(&attr, host.data()), cudaSuccess);
  EXPECT_EQ(attr.type, cudaMemoryTypeHost);
  h->reset();
  ASSERT_EQ(cudaPointerGetAttributes(&attr, host.data()), cudaSuccess);
  EXPECT_EQ(attr.type, cudaMemoryTypeUnregistered);
  EXPECT_GT(md_->query().reg_cost.c, 0);
}

TEST_F(CudaCopyTest, HostToDeviceAndBackByZcopy) {
  for (size_t n : {size_t{1}, size_t{4096}, size_t{1} << 20, size_t{8} << 20}) {
    DeviceBuffer dev(n);
    ASSERT_TRUE(dev.ok);
    std::unique_ptr<MemHandle> h;
    auto rkey = rkey_of(dev.ptr, n, &h);
    ASSERT_TRUE(rkey);
    std::vector<uint8_t> src = pattern(n, 3), back(n, 0);
    ASSERT_EQ(zcopy(true, src.data(), n, dev.ptr, *rkey), Status::Ok) << n;
    EXPECT_EQ(dev.read(), src) << n;
    ASSERT_EQ(zcopy(false, back.data(), n, dev.ptr, *rkey), Status::Ok) << n;
    EXPECT_EQ(back, src) << n;
  }
}

TEST_F(CudaCopyTest, DeviceToDeviceByZcopy) {
  constexpr size_t n = 4 << 20;
  DeviceBuffer a(n), b(n);
  ASSERT_TRUE(a.ok && b.ok);
  const std::vector<uint8_t> src = pattern(n, 9);
  ASSERT_EQ(cudaMemcpy(a.ptr, src.data(), n, cudaMemcpyHostToDevice), cudaSuccess);
  std::unique_ptr<MemHandle> h;
  auto rkey = rkey_of(b.ptr, n, &h);
  ASSERT_TRUE(rkey);
  ASSERT_EQ(zcopy(true, a.ptr, n, b.ptr, *rkey), Status::Ok);
  EXPECT_EQ(b.read(), src);
}

TEST_F(CudaCopyTest, ShortAndBcopyGoThroughBounceBuffers) {
  constexpr size_t n = 8192;
  DeviceBuffer dev(n);
  ASSERT_TRUE(dev.ok);
  std::unique_ptr<MemHandle> h;
  auto rkey = rkey_of(dev.ptr, n, &h);
  ASSERT_TRUE(rkey);
  const std::vector<uint8_t> src = pattern(n, 5);
  const auto addr = reinterpret_cast<uint64_t>(dev.ptr);
  ASSERT_EQ(ep_->put_short(src.data(), 100, addr, *rkey), Status::Ok);
  struct Arg {
    const uint8_t* src;
    std::vector<uint8_t> out;
  } arg{src.data() + 100, {}};
  auto pack = [](void* dest, void* a) -> size_t {
    std::memcpy(dest, static_cast<Arg*>(a)->src, n - 100);
    return n - 100;
  };
  auto sent = ep_->put_bcopy(pack, &arg, addr + 100, *rkey);
  ASSERT_TRUE(sent.ok());
  EXPECT_EQ(*sent, n - 100);
  Done f;
  ASSERT_EQ(wait(ep_->flush(&f.comp), f), Status::Ok);
  EXPECT_EQ(dev.read(), src);
  auto unpack = [](void* a, const void* data, size_t len) {
    auto* p = static_cast<const uint8_t*>(data);
    static_cast<Arg*>(a)->out.assign(p, p + len);
  };
  Done g;
  ASSERT_EQ(wait(ep_->get_bcopy(unpack, &arg, 4000, addr + 10, *rkey, &g.comp), g), Status::Ok);
  EXPECT_EQ(arg.out, std::vector<uint8_t>(src.begin() + 10, src.begin() + 4010));
}

TEST_F(CudaCopyTest, AccessOutsideTheRegionIsRefused) {
  DeviceBuffer dev(4096);
  ASSERT_TRUE(dev.ok);
  std::unique_ptr<MemHandle> h;
  auto rkey = rkey_of(dev.ptr, 4096, &h);
  ASSERT_TRUE(rkey);
  std::vector<uint8_t> buf(8192);
  EXPECT_EQ(zcopy(true, buf.data(), 8192, dev.ptr, *rkey), Status::InvalidParam);
  EXPECT_EQ(zcopy(false, buf.data(), 16, static_cast<char*>(dev.ptr) + 4090, *rkey),
            Status::InvalidParam);
  h.reset();  // unregistered: the rkey no longer works
  EXPECT_EQ(zcopy(false, buf.data(), 16, dev.ptr, *rkey), Status::InvalidParam);
}

}  // namespace
}  // namespace mc::uct::cuda
