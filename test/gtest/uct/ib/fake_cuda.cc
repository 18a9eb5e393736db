// SPDX-License-Identifier: Apache-2.0
// A fake CUDA driver library (libmc_test_fakecuda.so) for the tests of the
// ib GPU registration and of the CUDA transports, where there is no GPU: a
// "GPU allocation" is a memfd whose pages the CPU reaches only through a
// mapping of its own (the device address is a PROT_NONE reservation, as a
// CPU cannot dereference VRAM); the fake's cuMemcpyAsync copies through
// those mappings. Its dma-buf is a dup of the memfd; its legacy IPC handle
// and its VMM POSIX fd name the memfd, so another process imports it
// (/proc/<pid>/fd/<n>, checked against the inode the handle carries: a
// forged or stale handle is refused). Contexts, streams and events are
// real objects with the driver's rules: a copy needs a current context, an
// event reports CUDA_ERROR_NOT_READY on its first query after a record.
// The test reaches the allocator and the switches by dlsym on the same
// library (fake_gpu.h).
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

namespace {

constexpr int kSuccess = 0;
constexpr int kInvalidValue = 1;       // CUDA_ERROR_INVALID_VALUE
constexpr int kOutOfMemory = 2;        // CUDA_ERROR_OUT_OF_MEMORY
constexpr int kNoDevice = 100;         // CUDA_ERROR_NO_DEVICE
constexpr int kInvalidDevice = 101;    // CUDA_ERROR_INVALID_DEVICE
constexpr int kInvalidContext = 201;   // CUDA_ERROR_INVALID_CONTEXT
constexpr int kInvalidHandle = 400;    // CUDA_ERROR_INVALID_HANDLE
constexpr int kNotReady = 600;         // CUDA_ERROR_NOT_READY
constexpr int kAlreadyRegistered = 712;  // CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED
constexpr int kNotRegistered = 713;    // CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED
constexpr int kNotSupported = 801;     // CUDA_ERROR_NOT_SUPPORTED

constexpr uint64_t kIpcMagic = 0x6d63666b69706331;  // "mcfkipc1"

// What a fake legacy IPC handle (64 bytes) and a fake fabric handle hold.
struct IpcHandle {
  uint64_t magic;
  uint64_t pid;
  uint64_t fd;     // the owner's memfd
  uint64_t inode;  // the memfd's inode: a reused fd number is refused
  uint64_t size;
  uint64_t device;
  uint64_t pad[2];
};
static_assert(sizeof(IpcHandle) == 64);

struct Allocation {
  size_t size;
  int memfd;
  uint8_t* view;     // the fake's CPU window on the pages
  int device;
  bool imported;     // opened from another process's handle (legacy IPC)
  uint64_t vmm = 0;  // the VMM handle mapped here (cuMemMap), 0: none
};

// A VMM physical allocation (cuMemCreate / cuMemImportFromShareableHandle).
struct Physical {
  size_t size;
  int memfd;
  int device;
  int refs;  // the handle itself, plus each retain and mapping
};

struct Context {
  int device;
};
struct Stream {
  int device;
};
struct Event {
  bool recorded = false;
  int queries_left = 0;
};

std::mutex lock;
std::map<uint64_t, Allocation> allocations;  // by device address
std::map<uint64_t, Physical> physicals;      // by VMM handle
uint64_t next_vmm = 1;
std::map<uintptr_t, size_t> host_registered;  // by start
int handle_error = kSuccess;  // what cuMemGetHandleForAddressRange returns
int device_count = 1;
bool ipc_disabled = false;    // cuIpcGetMemHandle: CUDA_ERROR_NOT_SUPPORTED
bool fabric_supported = false;
size_t copies = 0;
Context contexts[8] = {{0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}};
thread_local std::vector<Context*> ctx_stack;

// The allocation holding `ptr`, or null.
std::pair<const uint64_t, Allocation>* find(uint64_t ptr) {
  auto it = allocations.upper_bound(ptr);
  if (it == allocations.begin()) return nullptr;
  --it;
  return ptr - it->first < it->second.size ? &*it : nullptr;
}

// The CPU address of `ptr`: inside a fake allocation its view, else itself
// (host memory); null for a device address outside every allocation.
uint8_t* resolve(uint64_t ptr, size_t size) {
  auto* a = find(ptr);
  if (a) {
    if (ptr - a->first + size > a->second.size) return nullptr;
    return a->second.view + (ptr - a->first);
  }
  return reinterpret_cast<uint8_t*>(ptr);
}

uint64_t inode_of(int fd) {
  struct stat st {};
  return fstat(fd, &st) == 0 ? st.st_ino : 0;
}

// Reserves `size` bytes of PROT_NONE address space and maps a view of
// `memfd` for the fake's copies; registers the allocation.
int add_allocation(int memfd, size_t size, int device, bool imported, uint64_t* out,
                   uint64_t vmm = 0) {
  void* va = mmap(nullptr, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  void* view = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
  if (va == MAP_FAILED || view == MAP_FAILED) {
    if (va != MAP_FAILED) munmap(va, size);
    if (view != MAP_FAILED) munmap(view, size);
    return kOutOfMemory;
  }
  allocations[reinterpret_cast<uint64_t>(va)] =
      Allocation{size, memfd, static_cast<uint8_t*>(view), device, imported, vmm};
  *out = reinterpret_cast<uint64_t>(va);
  return kSuccess;
}

void drop_allocation(std::map<uint64_t, Allocation>::iterator it) {
  munmap(reinterpret_cast<void*>(it->first), it->second.size);
  munmap(it->second.view, it->second.size);
  if (it->second.vmm == 0) close(it->second.memfd);
  allocations.erase(it);
}

// Opens the memfd a handle names in its owner process, checked against the
// inode and the size it carries. -1 with `*error` when it cannot.
int open_remote(const IpcHandle& h, int* error) {
  if (h.magic != kIpcMagic) {
    *error = kInvalidValue;
    return -1;
  }
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/%llu/fd/%llu", static_cast<unsigned long long>(h.pid),
                static_cast<unsigned long long>(h.fd));
  const int fd = open(path, O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    *error = kInvalidHandle;  // the owner has gone, or closed the allocation
    return -1;
  }
  struct stat st {};
  if (fstat(fd, &st) != 0 || st.st_ino != h.inode || static_cast<uint64_t>(st.st_size) < h.size) {
    close(fd);
    *error = kInvalidHandle;  // the number is another file now
    return -1;
  }
  return fd;
}

bool have_context() { return !ctx_stack.empty(); }

}  // namespace

#define MC_FAKE_API extern "C" __attribute__((visibility("default")))

MC_FAKE_API int cuInit(unsigned) { return device_count > 0 ? kSuccess : kNoDevice; }

MC_FAKE_API int cuDriverGetVersion(int* version) {
  *version = 12080;
  return kSuccess;
}

MC_FAKE_API int cuGetErrorName(int error, const char** name) {
  switch (error) {
    case kSuccess: *name = "CUDA_SUCCESS"; return kSuccess;
    case kInvalidValue: *name = "CUDA_ERROR_INVALID_VALUE"; return kSuccess;
    case kOutOfMemory: *name = "CUDA_ERROR_OUT_OF_MEMORY"; return kSuccess;
    case kNoDevice: *name = "CUDA_ERROR_NO_DEVICE"; return kSuccess;
    case kInvalidDevice: *name = "CUDA_ERROR_INVALID_DEVICE"; return kSuccess;
    case kInvalidContext: *name = "CUDA_ERROR_INVALID_CONTEXT"; return kSuccess;
    case kInvalidHandle: *name = "CUDA_ERROR_INVALID_HANDLE"; return kSuccess;
    case kNotReady: *name = "CUDA_ERROR_NOT_READY"; return kSuccess;
    case kAlreadyRegistered: *name = "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED"; return kSuccess;
    case kNotRegistered: *name = "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED"; return kSuccess;
    case kNotSupported: *name = "CUDA_ERROR_NOT_SUPPORTED"; return kSuccess;
    default: *name = nullptr; return kInvalidValue;
  }
}

MC_FAKE_API int cuGetErrorString(int error, const char** text) {
  const char* name = nullptr;
  if (cuGetErrorName(error, &name) != kSuccess) return kInvalidValue;
  *text = "(fake CUDA driver)";
  return kSuccess;
}

MC_FAKE_API int cuDeviceGetCount(int* count) {
  *count = device_count;
  return kSuccess;
}

MC_FAKE_API int cuDeviceGet(int* device, int ordinal) {
  if (ordinal < 0 || ordinal >= device_count) return kInvalidDevice;
  *device = ordinal;
  return kSuccess;
}

// PCI bus id 0x10 + ordinal; VMM and POSIX fd export supported; fabric as set.
MC_FAKE_API int cuDeviceGetAttribute(int* value, int attribute, int device) {
  if (device < 0 || device >= device_count) return kInvalidDevice;
  switch (attribute) {
    case 33: *value = 0x10 + device; return kSuccess;  // PCI_BUS_ID
    case 34: *value = 0; return kSuccess;              // PCI_DEVICE_ID
    case 50: *value = 0; return kSuccess;              // PCI_DOMAIN_ID
    case 102: *value = 1; return kSuccess;             // VMM supported
    case 103: *value = 1; return kSuccess;             // POSIX fd supported
    case 128: *value = fabric_supported ? 1 : 0; return kSuccess;
    default: return kInvalidValue;
  }
}

// "fake-gpu-000000N": the same in every process, as a GPU's UUID is.
MC_FAKE_API int cuDeviceGetUuid_v2(char* uuid, int device) {
  if (device < 0 || device >= device_count) return kInvalidDevice;
  std::memcpy(uuid, "fake-gpu-0000000", 16);
  uuid[15] = static_cast<char>('0' + device);
  return kSuccess;
}

// Every pair of fake devices reaches each other (one NVLink switch).
MC_FAKE_API int cuDeviceCanAccessPeer(int* can, int device, int peer) {
  if (device < 0 || device >= device_count || peer < 0 || peer >= device_count) {
    return kInvalidDevice;
  }
  *can = device != peer;
  return kSuccess;
}

MC_FAKE_API int cuDevicePrimaryCtxRetain(Context** ctx, int device) {
  if (device < 0 || device >= device_count) return kInvalidDevice;
  *ctx = &contexts[device];
  return kSuccess;
}

MC_FAKE_API int cuDevicePrimaryCtxRelease_v2(int) { return kSuccess; }

MC_FAKE_API int cuCtxPushCurrent_v2(Context* ctx) {
  if (!ctx) return kInvalidContext;
  ctx_stack.push_back(ctx);
  return kSuccess;
}

MC_FAKE_API int cuCtxPopCurrent_v2(Context** ctx) {
  if (ctx_stack.empty()) return kInvalidContext;
  if (ctx) *ctx = ctx_stack.back();
  ctx_stack.pop_back();
  return kSuccess;
}

MC_FAKE_API int cuCtxGetCurrent(Context** ctx) {
  *ctx = ctx_stack.empty() ? nullptr : ctx_stack.back();
  return kSuccess;
}

MC_FAKE_API int cuCtxGetDevice(int* device) {
  if (ctx_stack.empty()) return kInvalidContext;
  *device = ctx_stack.back()->device;
  return kSuccess;
}

// MEMORY_TYPE (2), IS_MANAGED (8), DEVICE_ORDINAL (9), IS_LEGACY_IPC (10),
// RANGE_START_ADDR (11), RANGE_SIZE (12), ALLOWED_HANDLE_TYPES (14).
MC_FAKE_API int cuPointerGetAttribute(void* data, int attribute, uint64_t ptr) {
  std::lock_guard guard(lock);
  const auto* a = find(ptr);
  if (!a) {
    auto it = host_registered.upper_bound(ptr);
    if (it != host_registered.begin() && ptr - std::prev(it)->first < std::prev(it)->second &&
        attribute == 2) {
      *static_cast<unsigned*>(data) = 1;  // CU_MEMORYTYPE_HOST: pinned host memory
      return kSuccess;
    }
    return kInvalidValue;  // host memory the driver does not know
  }
  switch (attribute) {
    case 2: *static_cast<unsigned*>(data) = 2; return kSuccess;  // CU_MEMORYTYPE_DEVICE
    case 8: *static_cast<unsigned*>(data) = 0; return kSuccess;
    case 9: *static_cast<int*>(data) = a->second.device; return kSuccess;
    case 10: *static_cast<int*>(data) = a->second.vmm == 0 && !a->second.imported; return kSuccess;
    case 11: *static_cast<uint64_t*>(data) = a->first; return kSuccess;
    case 12: *static_cast<size_t*>(data) = a->second.size; return kSuccess;
    case 14: *static_cast<uint64_t*>(data) = a->second.vmm ? 1 : 0; return kSuccess;
    default: return kInvalidValue;
  }
}

// The dma-buf of a whole allocation (what the ib md asks for): a dup of its memfd.
MC_FAKE_API int cuMemGetHandleForAddressRange(void* handle, uint64_t ptr, size_t size, int type,
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

MC_FAKE_API int cuMemGetAddressRange_v2(uint64_t* base, size_t* size, uint64_t ptr) {
  std::lock_guard guard(lock);
  const auto* a = find(ptr);
  if (!a) return kInvalidValue;
  if (base) *base = a->first;
  if (size) *size = a->second.size;
  return kSuccess;
}

MC_FAKE_API int cuMemHostRegister_v2(void* p, size_t size, unsigned) {
  if (!have_context()) return kInvalidContext;
  std::lock_guard guard(lock);
  const auto start = reinterpret_cast<uintptr_t>(p);
  for (const auto& [s, n] : host_registered) {
    if (start < s + n && s < start + size) return kAlreadyRegistered;
  }
  host_registered[start] = size;
  return kSuccess;
}

MC_FAKE_API int cuMemHostUnregister(void* p) {
  std::lock_guard guard(lock);
  return host_registered.erase(reinterpret_cast<uintptr_t>(p)) ? kSuccess : kNotRegistered;
}

MC_FAKE_API int cuMemAllocHost_v2(void** p, size_t size) {
  if (!have_context()) return kInvalidContext;
  *p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (*p == MAP_FAILED) return kOutOfMemory;
  std::lock_guard guard(lock);
  host_registered[reinterpret_cast<uintptr_t>(*p)] = size;
  return kSuccess;
}

MC_FAKE_API int cuMemFreeHost(void* p) {
  std::lock_guard guard(lock);
  auto it = host_registered.find(reinterpret_cast<uintptr_t>(p));
  if (it == host_registered.end()) return kInvalidValue;
  munmap(p, it->second);
  host_registered.erase(it);
  return kSuccess;
}

MC_FAKE_API int cuStreamCreate(Stream** stream, unsigned) {
  if (!have_context()) return kInvalidContext;
  *stream = new Stream{ctx_stack.back()->device};
  return kSuccess;
}

MC_FAKE_API int cuStreamDestroy_v2(Stream* stream) {
  delete stream;
  return kSuccess;
}

MC_FAKE_API int cuStreamSynchronize(Stream*) { return kSuccess; }

MC_FAKE_API int cuEventCreate(Event** event, unsigned) {
  if (!have_context()) return kInvalidContext;
  *event = new Event;
  return kSuccess;
}

MC_FAKE_API int cuEventDestroy_v2(Event* event) {
  delete event;
  return kSuccess;
}

MC_FAKE_API int cuEventRecord(Event* event, Stream*) {
  event->recorded = true;
  event->queries_left = 1;
  return kSuccess;
}

// NOT_READY once after each record, then done: callers must poll.
MC_FAKE_API int cuEventQuery(Event* event) {
  if (event->queries_left > 0) {
    --event->queries_left;
    return kNotReady;
  }
  return kSuccess;
}

// Copies at once, through the views; a device address outside every
// allocation (or past its end) is CUDA_ERROR_INVALID_VALUE.
MC_FAKE_API int cuMemcpyAsync(uint64_t dst, uint64_t src, size_t size, Stream*) {
  if (!have_context()) return kInvalidContext;
  std::lock_guard guard(lock);
  uint8_t* d = resolve(dst, size);
  uint8_t* s = resolve(src, size);
  if (!d || !s) return kInvalidValue;
  std::memmove(d, s, size);
  ++copies;
  return kSuccess;
}

// --- legacy IPC ----------------------------------------------------------------

MC_FAKE_API int cuIpcGetMemHandle(IpcHandle* handle, uint64_t ptr) {
  std::lock_guard guard(lock);
  if (ipc_disabled) return kNotSupported;
  const auto* a = find(ptr);
  if (!a || a->second.imported || a->second.vmm) return kInvalidValue;
  *handle = IpcHandle{kIpcMagic, static_cast<uint64_t>(getpid()),
                      static_cast<uint64_t>(a->second.memfd), inode_of(a->second.memfd),
                      a->second.size, static_cast<uint64_t>(a->second.device), {0, 0}};
  return kSuccess;
}

MC_FAKE_API int cuIpcOpenMemHandle_v2(uint64_t* ptr, IpcHandle handle, unsigned) {
  if (!have_context()) return kInvalidContext;
  if (handle.magic == kIpcMagic && handle.pid == static_cast<uint64_t>(getpid())) {
    return kInvalidContext;  // as the driver: not in the process that exported it
  }
  int error = kSuccess;
  const int fd = open_remote(handle, &error);
  if (fd < 0) return error;
  std::lock_guard guard(lock);
  const int rc = add_allocation(fd, handle.size, static_cast<int>(handle.device), true, ptr);
  if (rc != kSuccess) close(fd);
  return rc;
}

MC_FAKE_API int cuIpcCloseMemHandle(uint64_t ptr) {
  std::lock_guard guard(lock);
  auto it = allocations.find(ptr);
  if (it == allocations.end() || !it->second.imported) return kInvalidValue;
  drop_allocation(it);
  return kSuccess;
}

// --- virtual memory management --------------------------------------------------

MC_FAKE_API int cuMemRetainAllocationHandle(uint64_t* handle, void* addr) {
  std::lock_guard guard(lock);
  const auto* a = find(reinterpret_cast<uint64_t>(addr));
  if (!a || a->second.vmm == 0) return kInvalidValue;
  ++physicals[a->second.vmm].refs;
  *handle = a->second.vmm;
  return kSuccess;
}

MC_FAKE_API int cuMemRelease(uint64_t handle) {
  std::lock_guard guard(lock);
  auto it = physicals.find(handle);
  if (it == physicals.end()) return kInvalidValue;
  if (--it->second.refs == 0) {
    close(it->second.memfd);
    physicals.erase(it);
  }
  return kSuccess;
}

// POSIX fd (1): a dup of the memfd; fabric (8): a handle naming the memfd
// in this process, when fabric handles are switched on.
MC_FAKE_API int cuMemExportToShareableHandle(void* shareable, uint64_t handle, int type,
                                             unsigned long long) {
  std::lock_guard guard(lock);
  auto it = physicals.find(handle);
  if (it == physicals.end()) return kInvalidValue;
  if (type == 1) {
    const int fd = dup(it->second.memfd);
    if (fd < 0) return kOutOfMemory;
    *static_cast<int*>(shareable) = fd;
    return kSuccess;
  }
  if (type == 8) {
    if (!fabric_supported) return kNotSupported;
    *static_cast<IpcHandle*>(shareable) = IpcHandle{
        kIpcMagic, static_cast<uint64_t>(getpid()), static_cast<uint64_t>(it->second.memfd),
        inode_of(it->second.memfd), it->second.size, static_cast<uint64_t>(it->second.device),
        {0, 0}};
    return kSuccess;
  }
  return kInvalidValue;
}

MC_FAKE_API int cuMemImportFromShareableHandle(uint64_t* handle, void* shareable, int type) {
  int fd = -1;
  int device = 0;
  if (type == 1) {
    fd = dup(static_cast<int>(reinterpret_cast<intptr_t>(shareable)));
    if (fd < 0) return kInvalidHandle;
  } else if (type == 8) {
    if (!fabric_supported) return kNotSupported;
    const auto* h = static_cast<const IpcHandle*>(shareable);
    int error = kSuccess;
    fd = open_remote(*h, &error);
    if (fd < 0) return error;
    device = static_cast<int>(h->device);
  } else {
    return kInvalidValue;
  }
  struct stat st {};
  if (fstat(fd, &st) != 0 || st.st_size <= 0) {
    close(fd);
    return kInvalidHandle;
  }
  std::lock_guard guard(lock);
  const uint64_t h = next_vmm++;
  physicals[h] = Physical{static_cast<size_t>(st.st_size), fd, device, 1};
  *handle = h;
  return kSuccess;
}

MC_FAKE_API int cuMemGetAllocationPropertiesFromHandle(int* prop, uint64_t handle) {
  std::lock_guard guard(lock);
  auto it = physicals.find(handle);
  if (it == physicals.end()) return kInvalidValue;
  // CUmemAllocationProp: type, requestedHandleTypes, location {type, id}.
  prop[0] = 1;
  prop[1] = 1 | (fabric_supported ? 8 : 0);
  prop[2] = 1;
  prop[3] = it->second.device;
  return kSuccess;
}

// Reservations are recorded at map time: a reservation is address space only.
MC_FAKE_API int cuMemAddressReserve(uint64_t* ptr, size_t size, size_t, uint64_t,
                                    unsigned long long) {
  void* va = mmap(nullptr, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (va == MAP_FAILED) return kOutOfMemory;
  *ptr = reinterpret_cast<uint64_t>(va);
  return kSuccess;
}

MC_FAKE_API int cuMemAddressFree(uint64_t ptr, size_t size) {
  munmap(reinterpret_cast<void*>(ptr), size);
  return kSuccess;
}

MC_FAKE_API int cuMemMap(uint64_t ptr, size_t size, size_t offset, uint64_t handle,
                         unsigned long long) {
  std::lock_guard guard(lock);
  auto it = physicals.find(handle);
  if (it == physicals.end() || offset != 0 || size > it->second.size) return kInvalidValue;
  void* view = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, it->second.memfd, 0);
  if (view == MAP_FAILED) return kOutOfMemory;
  ++it->second.refs;
  allocations[ptr] = Allocation{size, it->second.memfd, static_cast<uint8_t*>(view),
                                it->second.device, false, handle};
  return kSuccess;
}

MC_FAKE_API int cuMemUnmap(uint64_t ptr, size_t) {
  uint64_t handle = 0;
  {
    std::lock_guard guard(lock);
    auto it = allocations.find(ptr);
    if (it == allocations.end() || it->second.vmm == 0) return kInvalidValue;
    handle = it->second.vmm;
    munmap(it->second.view, it->second.size);
    allocations.erase(it);  // the reservation stays: cuMemAddressFree frees it
  }
  return cuMemRelease(handle);
}

MC_FAKE_API int cuMemSetAccess(uint64_t ptr, size_t, const void*, size_t) {
  std::lock_guard guard(lock);
  return find(ptr) ? kSuccess : kInvalidValue;
}

// --- NVML (the same library stands for libnvidia-ml.so.1) -------------------------

namespace {
struct NvmlFabricInfo {
  unsigned char cluster_uuid[16];
  int status;
  unsigned int clique_id;
  unsigned char state;
};
}  // namespace

MC_FAKE_API int nvmlInit_v2() { return 0; }

// Every fake GPU is "GPU-66616b65-..." (its CUDA UUID); the handle is its ordinal + 1.
MC_FAKE_API int nvmlDeviceGetHandleByUUID(const char* uuid, void** device) {
  if (std::strncmp(uuid, "GPU-66616b65-", 13) != 0) return 13;  // NVML_ERROR_NOT_FOUND
  const size_t n = std::strlen(uuid);
  const int ordinal = uuid[n - 1] - '0';
  if (ordinal < 0 || ordinal >= device_count) return 13;
  *device = reinterpret_cast<void*>(static_cast<intptr_t>(ordinal + 1));
  return 0;
}

// With fabric handles switched on: registered in cluster "fake-nvl-domain!"
// clique FAKE_CUDA_CLIQUE (default 7); else not supported.
MC_FAKE_API int nvmlDeviceGetGpuFabricInfo(void*, NvmlFabricInfo* info) {
  std::lock_guard guard(lock);
  *info = NvmlFabricInfo{};
  if (!fabric_supported) return 0;  // state 0: not supported
  std::memcpy(info->cluster_uuid, "fake-nvl-domain!", 16);
  const char* clique = getenv("FAKE_CUDA_CLIQUE");
  info->clique_id = clique ? static_cast<unsigned>(atoi(clique)) : 7u;
  info->state = 3;
  return 0;
}

// --- the test's side --------------------------------------------------------------

/// A fake GPU allocation of `size` bytes (cuMemAlloc-like: legacy IPC
/// capable): its device address, and in `*memfd` the memfd holding its
/// pages (the fake's own; not to be closed).
MC_FAKE_API void* mc_fake_cuda_alloc(size_t size, int* memfd) {
  const int fd = memfd_create("mc-fake-gpu", MFD_CLOEXEC);
  if (fd < 0) return nullptr;
  if (ftruncate(fd, static_cast<off_t>(size)) != 0) {
    close(fd);
    return nullptr;
  }
  std::lock_guard guard(lock);
  uint64_t va = 0;
  if (add_allocation(fd, size, 0, false, &va) != kSuccess) {
    close(fd);
    return nullptr;
  }
  *memfd = fd;
  return reinterpret_cast<void*>(va);
}

MC_FAKE_API void mc_fake_cuda_free(void* ptr) {
  std::lock_guard guard(lock);
  auto it = allocations.find(reinterpret_cast<uint64_t>(ptr));
  if (it == allocations.end()) return;
  drop_allocation(it);
}

/// A VMM allocation of `size` bytes on `device` (cuMemCreate + reserve +
/// map + set access, as PyTorch's expandable segments do): its address,
/// and in `*memfd` the memfd holding its pages. Freed by mc_fake_cuda_vmm_free.
MC_FAKE_API void* mc_fake_cuda_vmm_alloc(size_t size, int device, int* memfd) {
  const int fd = memfd_create("mc-fake-gpu-vmm", MFD_CLOEXEC);
  if (fd < 0 || ftruncate(fd, static_cast<off_t>(size)) != 0) {
    if (fd >= 0) close(fd);
    return nullptr;
  }
  uint64_t h = 0;
  {
    std::lock_guard guard(lock);
    h = next_vmm++;
    physicals[h] = Physical{size, fd, device, 1};
  }
  uint64_t va = 0;
  if (cuMemAddressReserve(&va, size, 0, 0, 0) != kSuccess || cuMemMap(va, size, 0, h, 0) != kSuccess) {
    cuMemRelease(h);
    return nullptr;
  }
  cuMemRelease(h);  // the mapping keeps it, as after cuMemCreate + cuMemMap + cuMemRelease
  *memfd = fd;
  return reinterpret_cast<void*>(va);
}

MC_FAKE_API void mc_fake_cuda_vmm_free(void* ptr, size_t size) {
  cuMemUnmap(reinterpret_cast<uint64_t>(ptr), size);
  cuMemAddressFree(reinterpret_cast<uint64_t>(ptr), size);
}

/// Makes cuMemGetHandleForAddressRange return `error` (0: work again).
MC_FAKE_API void mc_fake_cuda_fail_handle(int error) {
  std::lock_guard guard(lock);
  handle_error = error;
}

/// Switches: legacy IPC export refused (CUDA_ERROR_NOT_SUPPORTED), fabric
/// handles supported. The number of devices is FAKE_CUDA_DEVICES
/// (read at load: cuInit sees it), default 1.
MC_FAKE_API void mc_fake_cuda_set(int no_legacy_ipc, int fabric) {
  std::lock_guard guard(lock);
  ipc_disabled = no_legacy_ipc != 0;
  fabric_supported = fabric != 0;
}

/// Copies cuMemcpyAsync has made in this process.
MC_FAKE_API size_t mc_fake_cuda_copies() {
  std::lock_guard guard(lock);
  return copies;
}

namespace {

// The device count of this process, from the environment of the test
// process (a test-only library: the project's knobs are not involved).
struct DeviceCountFromEnv {
  DeviceCountFromEnv() {
    if (const char* n = getenv("FAKE_CUDA_DEVICES")) device_count = atoi(n);
    if (device_count < 0 || device_count > 8) device_count = 8;
  }
} device_count_from_env;

}  // namespace
