// SPDX-License-Identifier: Apache-2.0
// The tests' side of the fake CUDA driver (fake_cuda.cc): its path, its
// allocator and fault switch, and a fake GPU buffer with a CPU view of its
// pages (a separate mapping of its memfd).
#pragma once

#include <dlfcn.h>
#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace mc::uct::test {

/// The fake driver library, loaded once; the ib md's dlopen of the same
/// path gets the same instance, so both see the same allocations.
class FakeCuda {
 public:
  static std::string path() { return MC_TEST_MODULE_DIR "/libmc_test_fakecuda.so"; }
  static FakeCuda& get() {
    static FakeCuda f;
    return f;
  }
  bool ok() const { return alloc && free && fail_handle && vmm_alloc && vmm_free && set && copies; }
  void* (*alloc)(size_t size, int* memfd) = nullptr;
  void (*free)(void* ptr) = nullptr;
  void (*fail_handle)(int error) = nullptr;
  /// A VMM allocation (cuMemCreate + cuMemMap) on `device`, and its release.
  void* (*vmm_alloc)(size_t size, int device, int* memfd) = nullptr;
  void (*vmm_free)(void* ptr, size_t size) = nullptr;
  /// Legacy IPC export refused (non-zero), fabric handles supported (non-zero).
  void (*set)(int no_legacy_ipc, int fabric) = nullptr;
  /// Copies cuMemcpyAsync has made in this process.
  size_t (*copies)() = nullptr;

 private:
  FakeCuda() {
    void* lib = dlopen(path().c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) return;
    alloc = reinterpret_cast<decltype(alloc)>(dlsym(lib, "mc_fake_cuda_alloc"));
    free = reinterpret_cast<decltype(free)>(dlsym(lib, "mc_fake_cuda_free"));
    fail_handle = reinterpret_cast<decltype(fail_handle)>(dlsym(lib, "mc_fake_cuda_fail_handle"));
    vmm_alloc = reinterpret_cast<decltype(vmm_alloc)>(dlsym(lib, "mc_fake_cuda_vmm_alloc"));
    vmm_free = reinterpret_cast<decltype(vmm_free)>(dlsym(lib, "mc_fake_cuda_vmm_free"));
    set = reinterpret_cast<decltype(set)>(dlsym(lib, "mc_fake_cuda_set"));
    copies = reinterpret_cast<decltype(copies)>(dlsym(lib, "mc_fake_cuda_copies"));
  }
};

/// A fake GPU allocation: `device` is its address (not CPU-accessible),
/// `view` the CPU's window on the same pages. `vmm`: made by the VMM API
/// (cuMemCreate + cuMemMap) on fake device `gpu` rather than cuMemAlloc.
struct FakeGpuBuffer {
  explicit FakeGpuBuffer(size_t n, bool vmm_alloc = false, int gpu = 0) : size(n), vmm(vmm_alloc) {
    device = vmm ? FakeCuda::get().vmm_alloc(n, gpu, &memfd) : FakeCuda::get().alloc(n, &memfd);
    if (!device) return;
    void* v = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
    view = v == MAP_FAILED ? nullptr : static_cast<uint8_t*>(v);
  }
  ~FakeGpuBuffer() {
    if (view) munmap(view, size);
    if (device) vmm ? FakeCuda::get().vmm_free(device, size) : FakeCuda::get().free(device);
  }
  FakeGpuBuffer(const FakeGpuBuffer&) = delete;
  FakeGpuBuffer& operator=(const FakeGpuBuffer&) = delete;
  bool ok() const { return device && view; }
  uintptr_t address(size_t offset = 0) const {
    return reinterpret_cast<uintptr_t>(device) + offset;
  }

  size_t size;
  bool vmm;
  int memfd = -1;
  void* device = nullptr;
  uint8_t* view = nullptr;
};

}  // namespace mc::uct::test
