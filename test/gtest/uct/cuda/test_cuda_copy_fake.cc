// SPDX-License-Identifier: Apache-2.0
// cuda_copy over the fake CUDA driver (MC_CUDA_DRIVER=libmc_test_fakecuda.so),
// on every machine: the module built without the toolkit loads the driver at
// run time, detects fake device memory, pins host memory, and copies on
// streams whose events progress() polls (the fake reports NOT_READY once per
// event). Data is checked through the fake's CPU view of its "VRAM".
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "ucs/config/sources.h"
#include "uct/api/ep.h"
#include "uct/api/iface.h"
#include "uct/base/component_loader.h"
#include "uct/ib/fake_gpu.h"

namespace mc::uct::cuda {
namespace {

using test::FakeCuda;
using test::FakeGpuBuffer;

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
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(i * 13 + seed + (i >> 8));
  return v;
}

ucs::config::Sources sources(std::map<std::string, std::string> env = {}) {
  env.emplace("MC_CUDA_DRIVER", FakeCuda::path());
  return *ucs::config::Sources::from(env, {});
}

// Sets MC_CUDA_DRIVER in the process environment for the scope (what
// md_names() and unavailable_reason() read).
class DriverEnv {
 public:
  explicit DriverEnv(const std::string& library) {
    if (const char* v = getenv("MC_CUDA_DRIVER")) saved_ = v;
    setenv("MC_CUDA_DRIVER", library.c_str(), 1);
  }
  ~DriverEnv() {
    if (saved_.empty()) {
      unsetenv("MC_CUDA_DRIVER");
    } else {
      setenv("MC_CUDA_DRIVER", saved_.c_str(), 1);
    }
  }

 private:
  std::string saved_;
};

TEST(CudaCopyFakeDriver, TheComponentNamesTheMissingDriverAndUsesTheOneConfigured) {
  Component* comp = find_component("cuda_copy");
  ASSERT_NE(comp, nullptr) << "libmc_uct_cuda.so was not loaded (see mc_info -m)";
  {
    DriverEnv env("/nonexistent/libcuda.so.1");
    EXPECT_TRUE(comp->md_names().empty());
    EXPECT_EQ(comp->unavailable_reason().rfind(
                  "no CUDA device: /nonexistent/libcuda.so.1 not found: ", 0),
              0u)
        << comp->unavailable_reason();
    auto md = comp->md_open("cuda_copy", *ucs::config::Sources::from(
                                             {{"MC_CUDA_DRIVER", "/nonexistent/libcuda.so.1"}}, {}));
    EXPECT_EQ(md.status(), Status::NoDevice);
  }
  {
    DriverEnv env(FakeCuda::path());
    EXPECT_EQ(comp->md_names(), std::vector<std::string>{"cuda_copy"});
    EXPECT_EQ(comp->unavailable_reason(), "");
  }
}

class CudaCopyFake : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(FakeCuda::get().ok()) << FakeCuda::path();
    Component* comp = find_component("cuda_copy");
    ASSERT_NE(comp, nullptr) << "libmc_uct_cuda.so was not loaded (see mc_info -m)";
    auto md = comp->md_open("cuda_copy", sources());
    ASSERT_TRUE(md.ok()) << ucs::status_string(md.status());
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

  // Progress until `d` fires; the fake completes an event on its second
  // query, so a completion reported from the post itself is a bug.
  Status wait(Status posted, Done& d) {
    if (posted != Status::InProgress) return posted;
    EXPECT_FALSE(d.fired);
    for (int spins = 0; !d.fired && spins < 1000; ++spins) iface_->progress();
    EXPECT_TRUE(d.fired);
    return d.comp.status;
  }

  Status zcopy(bool put, void* local, size_t n, uint64_t remote, const Rkey& rkey) {
    Iov iov{local, n, nullptr};
    Done d;
    return wait(put ? ep_->put_zcopy(&iov, 1, remote, rkey, &d.comp)
                    : ep_->get_zcopy(&iov, 1, remote, rkey, &d.comp),
                d);
  }

  std::unique_ptr<MemoryDomain> md_;
  std::unique_ptr<Iface> iface_;
  std::unique_ptr<Endpoint> ep_;
};

TEST_F(CudaCopyFake, DetectsFakeDeviceMemoryAndPinsHostMemory) {
  FakeGpuBuffer dev(1 << 16);
  ASSERT_TRUE(dev.ok());
  EXPECT_EQ(md_->detect_mem_type(dev.device, dev.size), MemType::Cuda);
  std::vector<uint8_t> host(1 << 16);
  EXPECT_EQ(md_->detect_mem_type(host.data(), host.size()), MemType::Host);
  std::unique_ptr<MemHandle> h;
  ASSERT_TRUE(rkey_of(host.data(), host.size(), &h));
  EXPECT_EQ(h->mem_type(), MemType::Host);
  std::unique_ptr<MemHandle> hd;
  ASSERT_TRUE(rkey_of(dev.device, dev.size, &hd));
  EXPECT_EQ(hd->mem_type(), MemType::Cuda);
  hd.reset();
  h.reset();
}

TEST_F(CudaCopyFake, HostToDeviceAndBackByZcopyThroughTheDriver) {
  for (size_t n : {size_t{1}, size_t{4096}, size_t{1} << 20}) {
    FakeGpuBuffer dev(n);
    ASSERT_TRUE(dev.ok());
    std::unique_ptr<MemHandle> h;
    auto rkey = rkey_of(dev.device, n, &h);
    ASSERT_TRUE(rkey);
    const size_t copies = FakeCuda::get().copies();
    std::vector<uint8_t> src = pattern(n, 3), back(n, 0);
    ASSERT_EQ(zcopy(true, src.data(), n, dev.address(), *rkey), Status::Ok) << n;
    EXPECT_EQ(std::memcmp(dev.view, src.data(), n), 0) << n;
    ASSERT_EQ(zcopy(false, back.data(), n, dev.address(), *rkey), Status::Ok) << n;
    EXPECT_EQ(back, src) << n;
    EXPECT_EQ(FakeCuda::get().copies(), copies + 2) << "each zcopy is one cuMemcpyAsync";
  }
}

TEST_F(CudaCopyFake, ShortAndBcopyGoThroughPinnedBounceBuffers) {
  constexpr size_t n = 4096;
  FakeGpuBuffer dev(n);
  ASSERT_TRUE(dev.ok());
  std::unique_ptr<MemHandle> h;
  auto rkey = rkey_of(dev.device, n, &h);
  ASSERT_TRUE(rkey);
  const std::vector<uint8_t> src = pattern(n, 5);
  ASSERT_EQ(ep_->put_short(src.data(), 100, dev.address(), *rkey), Status::Ok);
  Done flushed;
  const Status f = ep_->flush(&flushed.comp);
  if (f == Status::InProgress) {
    for (int spins = 0; !flushed.fired && spins < 1000; ++spins) iface_->progress();
    ASSERT_TRUE(flushed.fired);
  } else {
    ASSERT_EQ(f, Status::Ok);
  }
  EXPECT_EQ(std::memcmp(dev.view, src.data(), 100), 0);
}

TEST_F(CudaCopyFake, AnAccessOutsideTheRegistrationIsRefused) {
  FakeGpuBuffer dev(8192);
  ASSERT_TRUE(dev.ok());
  std::unique_ptr<MemHandle> h;
  auto rkey = rkey_of(dev.device, 4096, &h);
  ASSERT_TRUE(rkey);
  std::vector<uint8_t> buf(4096);
  EXPECT_EQ(zcopy(true, buf.data(), 4096, dev.address(1), *rkey), Status::InvalidParam);
}

}  // namespace
}  // namespace mc::uct::cuda
