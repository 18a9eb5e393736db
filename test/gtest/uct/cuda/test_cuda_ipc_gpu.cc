// SPDX-License-Identifier: Apache-2.0
// cuda_ipc on a real GPU, two processes on one GPU: this process spawns a
// second mc_gtest as the owner (CudaIpcGpuOwner.Serve: a fresh process, as
// CUDA does not survive fork once initialised), which cudaMallocs (legacy
// IPC) or cuMemCreates (VMM, POSIX fd) its memory and hands over the rkey;
// this process puts and gets 8 B to 64 MiB with the data checked on both
// sides, and prints cuda_ipc's bandwidth beside cudaMemcpy device to device
// (printed, not asserted). Skipped without a GPU; test/gpu/h200-run.sh runs it.
#include <cuda.h>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "common/pipe_util.h"
#include "ucs/config/sources.h"
#include "uct/api/ep.h"
#include "uct/api/iface.h"
#include "uct/cuda/base/cu_driver.h"
#include "uct/cuda/cuda_ipc/cuda_ipc_iface.h"
#include "uct/cuda/cuda_ipc/cuda_ipc_md.h"

extern char** environ;

namespace mc::uct::cuda {
namespace {

constexpr size_t kMax = size_t{64} << 20;
constexpr const char* kOwnerEnv = "CUDA_IPC_GPU_OWNER_FDS";  // not MC_: mc warns of those

bool have_gpu() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(i * 7 + seed + (i >> 12));
  return v;
}

std::unique_ptr<CudaIpcMd> open_md() {
  std::string why;
  Result<const CuDriver*> d = cu_driver_load("libcuda.so.1", &why);
  if (!d.ok()) return nullptr;
  CudaIpcConfig config = *ucs::config::read_table<CudaIpcConfig>(
      cuda_ipc_config_table(), *ucs::config::Sources::from({}, {}));
  Result<std::unique_ptr<CudaIpcMd>> md = CudaIpcMd::create(*d, config);
  return md.ok() ? std::move(*md) : nullptr;
}

// A driver entry point, from libcuda.so.1 itself (mc_gtest links only the
// runtime).
template <typename Fn>
Fn driver_fn(const char* name) {
  static void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  return lib ? reinterpret_cast<Fn>(dlsym(lib, name)) : nullptr;
}

// A VMM allocation that exports a POSIX fd (as PyTorch's expandable segments).
void* vmm_alloc(size_t n, size_t* size) {
  auto cuMemGetAllocationGranularity =
      driver_fn<decltype(&::cuMemGetAllocationGranularity)>("cuMemGetAllocationGranularity");
  auto cuMemCreate = driver_fn<decltype(&::cuMemCreate)>("cuMemCreate");
  auto cuMemAddressReserve = driver_fn<decltype(&::cuMemAddressReserve)>("cuMemAddressReserve");
  auto cuMemMap = driver_fn<decltype(&::cuMemMap)>("cuMemMap");
  auto cuMemSetAccess = driver_fn<decltype(&::cuMemSetAccess)>("cuMemSetAccess");
  auto cuMemRelease = driver_fn<decltype(&::cuMemRelease)>("cuMemRelease");
  if (!cuMemGetAllocationGranularity || !cuMemCreate || !cuMemAddressReserve || !cuMemMap ||
      !cuMemSetAccess || !cuMemRelease) {
    return nullptr;
  }
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  size_t gran = 0;
  if (cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM) != CUDA_SUCCESS) {
    return nullptr;
  }
  *size = (n + gran - 1) / gran * gran;
  CUmemGenericAllocationHandle h;
  CUdeviceptr p = 0;
  if (cuMemCreate(&h, *size, &prop, 0) != CUDA_SUCCESS) return nullptr;
  CUmemAccessDesc access{};
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  if (cuMemAddressReserve(&p, *size, 0, 0, 0) != CUDA_SUCCESS ||
      cuMemMap(p, *size, 0, h, 0) != CUDA_SUCCESS || cuMemSetAccess(p, *size, &access, 1) != CUDA_SUCCESS) {
    return nullptr;
  }
  cuMemRelease(h);
  return reinterpret_cast<void*>(p);
}

// The owner, in its own process: 'R' vmm, 'C' seed size, 'Q'.
TEST(CudaIpcGpuOwner, Serve) {
  const char* fds = std::getenv(kOwnerEnv);
  if (!fds) GTEST_SKIP() << "the owner side of CudaIpcGpu, which starts it";
  int cmd = -1, reply = -1;
  ASSERT_EQ(std::sscanf(fds, "%d,%d", &cmd, &reply), 2);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  std::unique_ptr<CudaIpcMd> md = open_md();
  ASSERT_TRUE(md);
  IfaceParams params;
  params.tl_name = "cuda_ipc";
  params.dev_name = "cuda";
  Result<std::unique_ptr<Iface>> iface = md->iface_open(params);
  ASSERT_TRUE(iface.ok());
  void* buf = nullptr;
  std::unique_ptr<MemHandle> h;
  for (;;) {
    char op = 0;
    uint64_t arg[2] = {0, 0};
    ASSERT_TRUE(mc::test::read_all(cmd, &op, 1) && mc::test::read_all(cmd, arg, sizeof(arg)));
    if (op == 'Q') break;
    if (op == 'R') {
      h.reset();
      size_t size = kMax;
      buf = arg[0] ? vmm_alloc(kMax, &size) : nullptr;
      if (!arg[0]) {
        ASSERT_EQ(cudaMalloc(&buf, kMax), cudaSuccess);
      }
      ASSERT_NE(buf, nullptr);
      Result<std::unique_ptr<MemHandle>> r = md->mem_reg(buf, kMax, kAccessAll);
      ASSERT_TRUE(r.ok());
      h = std::move(*r);
      std::vector<uint8_t> packed;
      ASSERT_EQ(md->mkey_pack(*h, &packed), Status::Ok);
      const uint64_t base = reinterpret_cast<uintptr_t>(buf);
      ASSERT_TRUE(mc::test::write_blob(reply, (*iface)->device_address()) &&
                  mc::test::write_blob(reply, (*iface)->iface_address()) &&
                  mc::test::write_blob(reply, packed) && mc::test::write_all(reply, &base, 8));
    } else if (op == 'C') {
      std::vector<uint8_t> have(arg[1]);
      ASSERT_EQ(cudaMemcpy(have.data(), buf, arg[1], cudaMemcpyDeviceToHost), cudaSuccess);
      const char ok = have == pattern(arg[1], static_cast<uint8_t>(arg[0])) ? 'Y' : 'N';
      ASSERT_TRUE(mc::test::write_all(reply, &ok, 1));
    }
  }
}

struct Done {
  Done() {
    comp.arg = this;
    comp.func = [](Completion* c) { static_cast<Done*>(c->arg)->fired = true; };
  }
  Completion comp;
  bool fired = false;
};

class CudaIpcGpu : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    if (std::getenv(kOwnerEnv)) GTEST_SKIP() << "in the owner process";
    if (!have_gpu()) GTEST_SKIP() << "no GPU";
    int c[2], r[2];
    ASSERT_EQ(pipe(c), 0);
    ASSERT_EQ(pipe(r), 0);
    const std::string fds = std::to_string(c[0]) + "," + std::to_string(r[1]);
    setenv(kOwnerEnv, fds.c_str(), 1);
    char exe[] = "/proc/self/exe";
    char filter[] = "--gtest_filter=CudaIpcGpuOwner.Serve";
    char* argv[] = {exe, filter, nullptr};
    ASSERT_EQ(posix_spawn(&pid_, exe, nullptr, nullptr, argv, environ), 0);
    unsetenv(kOwnerEnv);
    close(c[0]);
    close(r[1]);
    cmd_ = c[1];
    reply_ = r[0];
    ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
    md_ = open_md();
    ASSERT_TRUE(md_);
    IfaceParams params;
    params.tl_name = "cuda_ipc";
    params.dev_name = "cuda";
    Result<std::unique_ptr<Iface>> iface = md_->iface_open(params);
    ASSERT_TRUE(iface.ok());
    iface_ = std::move(*iface);
  }
  void TearDown() override {
    if (pid_ <= 0) return;
    send('Q', 0, 0);
    int st = 0;
    EXPECT_EQ(waitpid(pid_, &st, 0), pid_);
    EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "owner status " << st;
  }
  bool send(char op, uint64_t a, uint64_t b) {
    const uint64_t arg[2] = {a, b};
    return mc::test::write_all(cmd_, &op, 1) && mc::test::write_all(cmd_, arg, sizeof(arg));
  }
  Status zcopy(Endpoint& ep, bool put, void* local, size_t n, uint64_t remote, const Rkey& rkey) {
    Iov iov{local, n, nullptr};
    Done d;
    const Status s = put ? ep.put_zcopy(&iov, 1, remote, rkey, &d.comp)
                         : ep.get_zcopy(&iov, 1, remote, rkey, &d.comp);
    if (s != Status::InProgress) return s;
    while (!d.fired) iface_->progress();
    return d.comp.status;
  }

  pid_t pid_ = -1;
  int cmd_ = -1, reply_ = -1;
  std::unique_ptr<CudaIpcMd> md_;
  std::unique_ptr<Iface> iface_;
};

TEST_P(CudaIpcGpu, PutGetEightBytesToSixtyFourMebibytesOnOneGpu) {
  ASSERT_TRUE(send('R', GetParam() ? 1 : 0, 0));
  std::vector<uint8_t> dev, ifa, packed;
  uint64_t base = 0;
  ASSERT_TRUE(mc::test::read_blob(reply_, &dev) && mc::test::read_blob(reply_, &ifa) &&
              mc::test::read_blob(reply_, &packed) && mc::test::read_all(reply_, &base, 8));
  std::string why;
  ASSERT_TRUE(iface_->is_reachable(dev, ifa, &why)) << why;
  Result<std::unique_ptr<Endpoint>> ep = iface_->ep_create(dev, ifa);
  ASSERT_TRUE(ep.ok());
  Result<std::unique_ptr<Rkey>> rkey = md_->rkey_unpack(packed);
  ASSERT_TRUE(rkey.ok());
  void* src = nullptr;
  void* dst = nullptr;
  ASSERT_EQ(cudaMalloc(&src, kMax), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dst, kMax), cudaSuccess);
  uint8_t seed = 1;
  for (size_t n = 8; n <= kMax; n *= 8) {
    const std::vector<uint8_t> data = pattern(n, seed);
    ASSERT_EQ(cudaMemcpy(src, data.data(), n, cudaMemcpyHostToDevice), cudaSuccess);
    ASSERT_EQ(zcopy(**ep, true, src, n, base, **rkey), Status::Ok) << n;
    char ok = 0;
    ASSERT_TRUE(send('C', seed, n) && mc::test::read_all(reply_, &ok, 1));
    EXPECT_EQ(ok, 'Y') << n << " bytes put";
    ASSERT_EQ(zcopy(**ep, false, dst, n, base, **rkey), Status::Ok) << n;
    std::vector<uint8_t> back(n);
    ASSERT_EQ(cudaMemcpy(back.data(), dst, n, cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_EQ(back, data) << n << " bytes got back";
    if (n * 8 > kMax && n != kMax) n = kMax / 8;  // end on 64 MiB exactly
    ++seed;
  }
  // Bandwidth, 64 MiB x 20: cuda_ipc put into the other process's memory,
  // then cudaMemcpy device to device in this process.
  using clock = std::chrono::steady_clock;
  constexpr int kReps = 20;
  auto t0 = clock::now();
  for (int i = 0; i < kReps; ++i) ASSERT_EQ(zcopy(**ep, true, src, kMax, base, **rkey), Status::Ok);
  const double ipc = std::chrono::duration<double>(clock::now() - t0).count();
  t0 = clock::now();
  for (int i = 0; i < kReps; ++i) ASSERT_EQ(cudaMemcpy(dst, src, kMax, cudaMemcpyDeviceToDevice), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const double memcpy_s = std::chrono::duration<double>(clock::now() - t0).count();
  std::printf("cuda_ipc (%s) put 64 MiB x %d: %.1f GB/s; cudaMemcpy D2D: %.1f GB/s\n",
              GetParam() ? "VMM, POSIX fd" : "legacy IPC", kReps, kReps * kMax / ipc / 1e9,
              kReps * kMax / memcpy_s / 1e9);
  (void)cudaFree(src);
  (void)cudaFree(dst);
}

INSTANTIATE_TEST_SUITE_P(Alloc, CudaIpcGpu, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "Vmm" : "CudaMalloc"; });

}  // namespace
}  // namespace mc::uct::cuda
