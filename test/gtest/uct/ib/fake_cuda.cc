// SPDX-License-Identifier: Apache-2.0
// A fake CUDA driver library (libmc_test_fakecuda.so) for the ib GPU
// registration tests, where there is no GPU: a "GPU allocation" is a memfd
// whose pages the CPU reaches only through a mapping of its own (the
// device address is a PROT_NONE reservation, as a CPU cannot dereference
// VRAM), and its dma-buf is a dup of the memfd. The test reaches the
// allocator and the fault switches by dlsym on the same library.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>

namespace {

constexpr int kSuccess = 0;
constexpr int kInvalidValue = 1;    // CUDA_ERROR_INVALID_VALUE
constexpr int kOutOfMemory = 2;     // CUDA_ERROR_OUT_OF_MEMORY
constexpr int kNotSupported = 801;  // CUDA_ERROR_NOT_SUPPORTED

struct Allocation {
  size_t size;
  int memfd;
};

std::mutex lock;
std::map<uint64_t, Allocation> allocations;  // by device address
int handle_error = kSuccess;                 // what cuMemGetHandleForAddressRange returns

// The allocation holding `ptr`, or null.
const std::pair<const uint64_t, Allocation>* find(uint64_t ptr) {
  auto it = allocations.upper_bound(ptr);
  if (it == allocations.begin()) return nullptr;
  --it;
  return ptr - it->first < it->second.size ? &*it : nullptr;
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) int cuInit(unsigned) {
  return kSuccess;
}

__attribute__((visibility("default"))) int cuGetErrorName(int error, const char** name) {
  switch (error) {
    case kSuccess: *name = "CUDA_SUCCESS"; return kSuccess;
    case kInvalidValue: *name = "CUDA_ERROR_INVALID_VALUE"; return kSuccess;
    case kOutOfMemory: *name = "CUDA_ERROR_OUT_OF_MEMORY"; return kSuccess;
    case kNotSupported: *name = "CUDA_ERROR_NOT_SUPPORTED"; return kSuccess;
    default: *name = nullptr; return kInvalidValue;
  }
}

// MEMORY_TYPE (2), IS_MANAGED (8), RANGE_START_ADDR (11), RANGE_SIZE (12).
__attribute__((visibility("default"))) int cuPointerGetAttribute(void* data, int attribute,
                                                                 uint64_t ptr) {
  std::lock_guard guard(lock);
  const auto* a = find(ptr);
  if (!a) return kInvalidValue;  // host memory the driver does not know
  switch (attribute) {
    case 2: *static_cast<unsigned*>(data) = 2; return kSuccess;  // CU_MEMORYTYPE_DEVICE
    case 8: *static_cast<unsigned*>(data) = 0; return kSuccess;
    case 11: *static_cast<uint64_t*>(data) = a->first; return kSuccess;
    case 12: *static_cast<size_t*>(data) = a->second.size; return kSuccess;
    default: return kInvalidValue;
  }
}

// The dma-buf of a whole allocation (what the ib md asks for): a dup of its memfd.
__attribute__((visibility("default"))) int cuMemGetHandleForAddressRange(void* handle, uint64_t ptr,
                                                                         size_t size, int type,
                                                                         unsigned long long flags) {
  std::lock_guard guard(lock);
  if (handle_error != kSuccess) return handle_error;
  const auto page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  const auto* a = find(ptr);
  if (type != 1 || flags != 0 || !a || a->first != ptr || (ptr | size) & (page - 1) ||
      size > ((a->second.size + page - 1) & ~(page - 1))) {
    return kInvalidValue;
  }
  const int fd = dup(a->second.memfd);
  if (fd < 0) return kOutOfMemory;
  *static_cast<int*>(handle) = fd;
  return kSuccess;
}

/// A fake GPU allocation of `size` bytes: its device address, and in
/// `*memfd` the memfd holding its pages (the fake's own; not to be closed).
__attribute__((visibility("default"))) void* mc_fake_cuda_alloc(size_t size, int* memfd) {
  const int fd = memfd_create("mc-fake-gpu", MFD_CLOEXEC);
  if (fd < 0) return nullptr;
  void* va = mmap(nullptr, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (ftruncate(fd, static_cast<off_t>(size)) != 0 || va == MAP_FAILED) {
    if (va != MAP_FAILED) munmap(va, size);
    close(fd);
    return nullptr;
  }
  std::lock_guard guard(lock);
  allocations[reinterpret_cast<uint64_t>(va)] = {size, fd};
  *memfd = fd;
  return va;
}

__attribute__((visibility("default"))) void mc_fake_cuda_free(void* ptr) {
  std::lock_guard guard(lock);
  auto it = allocations.find(reinterpret_cast<uint64_t>(ptr));
  if (it == allocations.end()) return;
  munmap(ptr, it->second.size);
  close(it->second.memfd);
  allocations.erase(it);
}

/// Makes cuMemGetHandleForAddressRange return `error` (0: work again).
__attribute__((visibility("default"))) void mc_fake_cuda_fail_handle(int error) {
  std::lock_guard guard(lock);
  handle_error = error;
}

}  // extern "C"
