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
  bool ok() const { return alloc && free && fail_handle; }
  void* (*alloc)(size_t size, int* memfd) = nullptr;
  void (*free)(void* ptr) = nullptr;
  void (*fail_handle)(int error) = nullptr;

 private:
  FakeCuda() {
    void* lib = dlopen(path().c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) return;
    alloc = reinterpret_cast<decltype(alloc)>(dlsym(lib, "mc_fake_cuda_alloc"));
    free = reinterpret_cast<decltype(free)>(dlsym(lib, "mc_fake_cuda_free"));
    fail_handle = reinterpret_cast<decltype(fail_handle)>(dlsym(lib, "mc_fake_cuda_fail_handle"));
  }
};

/// A fake GPU allocation: `device` is its address (not CPU-accessible),
/// `view` the CPU's window on the same pages.
struct FakeGpuBuffer {
  explicit FakeGpuBuffer(size_t n) : size(n) {
    device = FakeCuda::get().alloc(n, &memfd);
    if (!device) return;
    void* v = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
    view = v == MAP_FAILED ? nullptr : static_cast<uint8_t*>(v);
  }
  ~FakeGpuBuffer() {
    if (view) munmap(view, size);
    if (device) FakeCuda::get().free(device);
  }
  FakeGpuBuffer(const FakeGpuBuffer&) = delete;
  FakeGpuBuffer& operator=(const FakeGpuBuffer&) = delete;
  bool ok() const { return device && view; }
  uintptr_t address(size_t offset = 0) const {
    return reinterpret_cast<uintptr_t>(device) + offset;
  }

  size_t size;
  int memfd = -1;
  void* device = nullptr;
  uint8_t* view = nullptr;
};

}  // namespace mc::uct::test
