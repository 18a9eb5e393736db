// SPDX-License-Identifier: Apache-2.0
// The CUDA driver reached through dlopen/dlsym.
#include "uct/cuda/base/cu_driver.h"

#include <map>
#include <memory>
#include <mutex>

#include "uct/base/dl_lib.h"

namespace mc::uct::cuda {

namespace {

struct Loaded {
  CuDriver driver;
  std::string why;  // empty when usable
};

// Binds the entry points cuda_copy and cuda_ipc need; false with `*why`.
// The names are the ABI's: cuda.h #defines cuMemHostRegister to
// cuMemHostRegister_v2 and so on.
bool bind_required(void* lib, const std::string& name, CuDriver& d, std::string* why) {
  return dl_bind(lib, name, "cuInit", &d.init, why) &&
         dl_bind(lib, name, "cuDriverGetVersion", &d.driver_get_version, why) &&
         dl_bind(lib, name, "cuGetErrorName", &d.get_error_name, why) &&
         dl_bind(lib, name, "cuGetErrorString", &d.get_error_string, why) &&
         dl_bind(lib, name, "cuDeviceGetCount", &d.device_get_count, why) &&
         dl_bind(lib, name, "cuDeviceGet", &d.device_get, why) &&
         dl_bind(lib, name, "cuDeviceGetAttribute", &d.device_get_attribute, why) &&
         dl_bind(lib, name, "cuDeviceGetUuid_v2", &d.device_get_uuid, why) &&
         dl_bind(lib, name, "cuDeviceCanAccessPeer", &d.device_can_access_peer, why) &&
         dl_bind(lib, name, "cuDevicePrimaryCtxRetain", &d.primary_ctx_retain, why) &&
         dl_bind(lib, name, "cuDevicePrimaryCtxRelease_v2", &d.primary_ctx_release, why) &&
         dl_bind(lib, name, "cuCtxPushCurrent_v2", &d.ctx_push_current, why) &&
         dl_bind(lib, name, "cuCtxPopCurrent_v2", &d.ctx_pop_current, why) &&
         dl_bind(lib, name, "cuCtxGetCurrent", &d.ctx_get_current, why) &&
         dl_bind(lib, name, "cuCtxGetDevice", &d.ctx_get_device, why) &&
         dl_bind(lib, name, "cuPointerGetAttribute", &d.pointer_get_attribute, why) &&
         dl_bind(lib, name, "cuMemHostRegister_v2", &d.mem_host_register, why) &&
         dl_bind(lib, name, "cuMemHostUnregister", &d.mem_host_unregister, why) &&
         dl_bind(lib, name, "cuMemAllocHost_v2", &d.mem_alloc_host, why) &&
         dl_bind(lib, name, "cuMemFreeHost", &d.mem_free_host, why) &&
         dl_bind(lib, name, "cuMemGetAddressRange_v2", &d.mem_get_address_range, why) &&
         dl_bind(lib, name, "cuStreamCreate", &d.stream_create, why) &&
         dl_bind(lib, name, "cuStreamDestroy_v2", &d.stream_destroy, why) &&
         dl_bind(lib, name, "cuStreamSynchronize", &d.stream_synchronize, why) &&
         dl_bind(lib, name, "cuEventCreate", &d.event_create, why) &&
         dl_bind(lib, name, "cuEventDestroy_v2", &d.event_destroy, why) &&
         dl_bind(lib, name, "cuEventRecord", &d.event_record, why) &&
         dl_bind(lib, name, "cuEventQuery", &d.event_query, why) &&
         dl_bind(lib, name, "cuMemcpyAsync", &d.memcpy_async, why) &&
         dl_bind(lib, name, "cuIpcGetMemHandle", &d.ipc_get_mem_handle, why) &&
         dl_bind(lib, name, "cuIpcOpenMemHandle_v2", &d.ipc_open_mem_handle, why) &&
         dl_bind(lib, name, "cuIpcCloseMemHandle", &d.ipc_close_mem_handle, why);
}

void bind_optional(void* lib, CuDriver& d) {
  using cu::MemRetainAllocationHandleFn;
  d.mem_retain_allocation_handle =
      dl_find<cu::MemRetainAllocationHandleFn>(lib, "cuMemRetainAllocationHandle");
  d.mem_release = dl_find<cu::MemReleaseFn>(lib, "cuMemRelease");
  d.mem_export_to_shareable_handle =
      dl_find<cu::MemExportToShareableHandleFn>(lib, "cuMemExportToShareableHandle");
  d.mem_import_from_shareable_handle =
      dl_find<cu::MemImportFromShareableHandleFn>(lib, "cuMemImportFromShareableHandle");
  d.mem_get_allocation_properties = dl_find<cu::MemGetAllocationPropertiesFromHandleFn>(
      lib, "cuMemGetAllocationPropertiesFromHandle");
  d.mem_address_reserve = dl_find<cu::MemAddressReserveFn>(lib, "cuMemAddressReserve");
  d.mem_address_free = dl_find<cu::MemAddressFreeFn>(lib, "cuMemAddressFree");
  d.mem_map = dl_find<cu::MemMapFn>(lib, "cuMemMap");
  d.mem_unmap = dl_find<cu::MemUnmapFn>(lib, "cuMemUnmap");
  d.mem_set_access = dl_find<cu::MemSetAccessFn>(lib, "cuMemSetAccess");
}

std::unique_ptr<Loaded> load(const std::string& library) {
  auto l = std::make_unique<Loaded>();
  std::string dl_error;
  void* lib = dl_open(library, &dl_error);
  if (!lib) {
    l->why = library + " not found: " + dl_error;
    return l;
  }
  CuDriver& d = l->driver;
  d.library = library;
  if (!bind_required(lib, library, d, &l->why)) {
    dlclose(lib);
    return l;
  }
  bind_optional(lib, d);
  const cu::Result rc = d.init(0);
  if (rc != cu::kSuccess) {
    l->why = "cuInit: " + d.error_string(rc);
    return l;  // stays loaded: cuInit may have started driver threads
  }
  if (d.driver_get_version(&d.version) != cu::kSuccess) d.version = 0;
  return l;
}

}  // namespace

bool CuDriver::has_vmm() const {
  return mem_retain_allocation_handle && mem_release && mem_export_to_shareable_handle &&
         mem_import_from_shareable_handle && mem_get_allocation_properties &&
         mem_address_reserve && mem_address_free && mem_map && mem_unmap && mem_set_access;
}

std::string CuDriver::error_string(cu::Result error) const {
  const char* name = nullptr;
  const char* text = nullptr;
  if (!get_error_name || get_error_name(error, &name) != cu::kSuccess || !name) {
    return "CUresult " + std::to_string(error);
  }
  std::string s = name;
  if (get_error_string && get_error_string(error, &text) == cu::kSuccess && text) {
    s += std::string(": ") + text;
  }
  return s;
}

ucs::Result<const CuDriver*> cu_driver_load(const std::string& library, std::string* why) {
  // One entry per library ever asked for, never removed: the pointers
  // handed out stay valid.
  static std::mutex lock;
  static std::map<std::string, std::unique_ptr<Loaded>> loaded;
  std::lock_guard guard(lock);
  std::unique_ptr<Loaded>& l = loaded[library];
  if (!l) l = load(library);
  if (!l->why.empty()) {
    if (why) *why = l->why;
    return ucs::Status::NoDevice;
  }
  return &l->driver;
}

namespace {

// The primary context of each device, retained on first use and kept for
// the life of the process (the runtime keeps it too; releasing it while an
// application's runtime uses it would not free it anyway).
cu::Result primary_context(const CuDriver& d, int device, cu::Context* out) {
  static std::mutex lock;
  static std::map<std::pair<const CuDriver*, int>, cu::Context> contexts;
  std::lock_guard guard(lock);
  auto it = contexts.find({&d, device});
  if (it != contexts.end()) {
    *out = it->second;
    return cu::kSuccess;
  }
  cu::Device dev = 0;
  cu::Result rc = d.device_get(&dev, device);
  if (rc != cu::kSuccess) return rc;
  cu::Context ctx = nullptr;
  rc = d.primary_ctx_retain(&ctx, dev);
  if (rc != cu::kSuccess) return rc;
  contexts[{&d, device}] = ctx;
  *out = ctx;
  return cu::kSuccess;
}

}  // namespace

int current_device(const CuDriver& driver) {
  cu::Context ctx = nullptr;
  cu::Device device = 0;
  if (driver.ctx_get_current(&ctx) != cu::kSuccess || !ctx) return 0;
  return driver.ctx_get_device(&device) == cu::kSuccess ? device : 0;
}

CtxScope::CtxScope(const CuDriver& driver, int device) : driver_(driver) {
  cu::Context ctx = nullptr;
  result_ = primary_context(driver, device, &ctx);
  if (result_ != cu::kSuccess) return;
  cu::Context current = nullptr;
  if (driver.ctx_get_current(&current) == cu::kSuccess && current == ctx) return;
  result_ = driver.ctx_push_current(ctx);
  pushed_ = result_ == cu::kSuccess;
}

CtxScope::~CtxScope() {
  if (!pushed_) return;
  cu::Context popped = nullptr;
  (void)driver_.ctx_pop_current(&popped);
}

}  // namespace mc::uct::cuda
