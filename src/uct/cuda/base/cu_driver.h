// SPDX-License-Identifier: Apache-2.0
// The CUDA driver as a table of function pointers filled by dlopen/dlsym of
// libcuda.so.1 (or a fake driver in the tests, MC_CUDA_DRIVER): the CUDA
// modules never link it, so they build without the toolkit and load, saying
// why they offer nothing, on a machine without a GPU.
#pragma once

#include <string>

#include "ucs/status/status.h"
#include "uct/cuda/base/cu_api.h"

namespace mc::uct::cuda {

/// The driver entry points. Those marked optional are null in a driver that
/// lacks them (older drivers: VMM export, fabric handles).
struct CuDriver {
  std::string library;  ///< what was dlopen'ed
  int version = 0;      ///< cuDriverGetVersion: 12040 for 12.4

  cu::InitFn init = nullptr;
  cu::DriverGetVersionFn driver_get_version = nullptr;
  cu::GetErrorNameFn get_error_name = nullptr;
  cu::GetErrorStringFn get_error_string = nullptr;
  cu::DeviceGetCountFn device_get_count = nullptr;
  cu::DeviceGetFn device_get = nullptr;
  cu::DeviceGetAttributeFn device_get_attribute = nullptr;
  cu::DeviceGetUuidFn device_get_uuid = nullptr;
  cu::DeviceCanAccessPeerFn device_can_access_peer = nullptr;
  cu::DevicePrimaryCtxRetainFn primary_ctx_retain = nullptr;
  cu::DevicePrimaryCtxReleaseFn primary_ctx_release = nullptr;
  cu::CtxPushCurrentFn ctx_push_current = nullptr;
  cu::CtxPopCurrentFn ctx_pop_current = nullptr;
  cu::CtxGetCurrentFn ctx_get_current = nullptr;
  cu::CtxGetDeviceFn ctx_get_device = nullptr;
  cu::PointerGetAttributeFn pointer_get_attribute = nullptr;
  cu::MemHostRegisterFn mem_host_register = nullptr;
  cu::MemHostUnregisterFn mem_host_unregister = nullptr;
  cu::MemAllocHostFn mem_alloc_host = nullptr;
  cu::MemFreeHostFn mem_free_host = nullptr;
  cu::MemGetAddressRangeFn mem_get_address_range = nullptr;
  cu::StreamCreateFn stream_create = nullptr;
  cu::StreamDestroyFn stream_destroy = nullptr;
  cu::StreamSynchronizeFn stream_synchronize = nullptr;
  cu::EventCreateFn event_create = nullptr;
  cu::EventDestroyFn event_destroy = nullptr;
  cu::EventRecordFn event_record = nullptr;
  cu::EventQueryFn event_query = nullptr;
  cu::MemcpyAsyncFn memcpy_async = nullptr;
  cu::IpcGetMemHandleFn ipc_get_mem_handle = nullptr;
  cu::IpcOpenMemHandleFn ipc_open_mem_handle = nullptr;
  cu::IpcCloseMemHandleFn ipc_close_mem_handle = nullptr;
  // Optional: the virtual memory management API (CUDA 10.2+).
  cu::MemRetainAllocationHandleFn mem_retain_allocation_handle = nullptr;
  cu::MemReleaseFn mem_release = nullptr;
  cu::MemExportToShareableHandleFn mem_export_to_shareable_handle = nullptr;
  cu::MemImportFromShareableHandleFn mem_import_from_shareable_handle = nullptr;
  cu::MemGetAllocationPropertiesFromHandleFn mem_get_allocation_properties = nullptr;
  cu::MemAddressReserveFn mem_address_reserve = nullptr;
  cu::MemAddressFreeFn mem_address_free = nullptr;
  cu::MemMapFn mem_map = nullptr;
  cu::MemUnmapFn mem_unmap = nullptr;
  cu::MemSetAccessFn mem_set_access = nullptr;

  /// Whether every VMM entry point is there.
  bool has_vmm() const;
  /// "CUDA_ERROR_INVALID_VALUE: invalid argument", or "CUresult <n>".
  std::string error_string(cu::Result error) const;
};

/// The driver of `library` (a name dlopen searches, or a path), loaded and
/// cuInit'ed once per library per process. NoDevice with `*why` set when it
/// cannot be used: "libcuda.so.1 not found: <dlerror>", "libcuda.so.1 lacks
/// symbol cuMemcpyAsync", "cuInit: CUDA_ERROR_NO_DEVICE: no CUDA-capable
/// device is detected". Thread-safe; the table lives as long as the process.
ucs::Result<const CuDriver*> cu_driver_load(const std::string& library, std::string* why);

/// The device of this thread's current context (the one the application's
/// cudaSetDevice chose), else 0.
int current_device(const CuDriver& driver);

/// Makes device `device`'s primary context current on this thread for the
/// scope (retained once per device and process, as the CUDA runtime does,
/// so memory the application allocated through the runtime is in the same
/// context), restoring the previous one at the end.
class CtxScope {
 public:
  CtxScope(const CuDriver& driver, int device);
  ~CtxScope();
  CtxScope(const CtxScope&) = delete;
  CtxScope& operator=(const CtxScope&) = delete;
  /// kSuccess, or why the context could not be made current.
  cu::Result result() const { return result_; }
  bool ok() const { return result_ == cu::kSuccess; }

 private:
  const CuDriver& driver_;
  cu::Result result_ = cu::kSuccess;
  bool pushed_ = false;
};

}  // namespace mc::uct::cuda
