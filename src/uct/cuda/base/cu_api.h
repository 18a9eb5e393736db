// SPDX-License-Identifier: Apache-2.0
// The subset of the CUDA driver API (cuda.h) the CUDA modules call, declared
// here so that they build without the CUDA toolkit: the ABI types, the
// constants and the signatures, with cuda.h's values. cu_api_check.cc checks
// every one against cuda.h where the toolkit is present.
#pragma once

#include <cstddef>
#include <cstdint>

namespace mc::uct::cuda::cu {

// --- types -----------------------------------------------------------------
using Result = int;                        ///< CUresult; 0 is CUDA_SUCCESS
using Device = int;                        ///< CUdevice (an ordinal)
using DevicePtr = unsigned long long;      ///< CUdeviceptr
using Context = struct CtxOpaque*;         ///< CUcontext
using Stream = struct StreamOpaque*;       ///< CUstream
using Event = struct EventOpaque*;         ///< CUevent
using MemHandle = unsigned long long;      ///< CUmemGenericAllocationHandle

inline constexpr size_t kIpcHandleSize = 64;  ///< CU_IPC_HANDLE_SIZE
/// CUipcMemHandle: an opaque legacy IPC handle of a cuMemAlloc allocation.
struct IpcMemHandle {
  char reserved[kIpcHandleSize];
};
/// CUmemFabricHandle: an opaque fabric (multi-node NVLink) handle.
struct FabricHandle {
  unsigned char data[64];
};
/// CUuuid.
struct Uuid {
  char bytes[16];
};
/// CUmemLocation.
struct MemLocation {
  int type;  ///< CUmemLocationType
  int id;
};
/// CUmemAllocationProp.
struct MemAllocationProp {
  int type;                  ///< CUmemAllocationType
  int requested_handle_types;  ///< CUmemAllocationHandleType bits
  MemLocation location;
  void* win32_metadata;
  struct {
    unsigned char compression_type;
    unsigned char gpu_direct_rdma_capable;
    unsigned short usage;
    unsigned char reserved[4];
  } alloc_flags;
};
/// CUmemAccessDesc.
struct MemAccessDesc {
  MemLocation location;
  int flags;  ///< CUmemAccess_flags
};

// --- CUresult values ---------------------------------------------------------
inline constexpr Result kSuccess = 0;                           ///< CUDA_SUCCESS
inline constexpr Result kErrorInvalidValue = 1;                 ///< CUDA_ERROR_INVALID_VALUE
inline constexpr Result kErrorOutOfMemory = 2;                  ///< CUDA_ERROR_OUT_OF_MEMORY
inline constexpr Result kErrorNotInitialized = 3;               ///< CUDA_ERROR_NOT_INITIALIZED
inline constexpr Result kErrorNoDevice = 100;                   ///< CUDA_ERROR_NO_DEVICE
inline constexpr Result kErrorInvalidDevice = 101;              ///< CUDA_ERROR_INVALID_DEVICE
inline constexpr Result kErrorInvalidContext = 201;             ///< CUDA_ERROR_INVALID_CONTEXT
inline constexpr Result kErrorMapFailed = 205;                  ///< CUDA_ERROR_MAP_FAILED
inline constexpr Result kErrorAlreadyMapped = 208;              ///< CUDA_ERROR_ALREADY_MAPPED
inline constexpr Result kErrorInvalidHandle = 400;              ///< CUDA_ERROR_INVALID_HANDLE
inline constexpr Result kErrorNotFound = 500;                   ///< CUDA_ERROR_NOT_FOUND
inline constexpr Result kErrorNotReady = 600;                   ///< CUDA_ERROR_NOT_READY
inline constexpr Result kErrorHostMemoryAlreadyRegistered = 712;  ///< CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED
inline constexpr Result kErrorNotPermitted = 800;               ///< CUDA_ERROR_NOT_PERMITTED
inline constexpr Result kErrorNotSupported = 801;               ///< CUDA_ERROR_NOT_SUPPORTED
inline constexpr Result kErrorSystemNotReady = 802;             ///< CUDA_ERROR_SYSTEM_NOT_READY

// --- enums and flags -----------------------------------------------------------
inline constexpr int kPointerAttrContext = 1;          ///< CU_POINTER_ATTRIBUTE_CONTEXT
inline constexpr int kPointerAttrMemoryType = 2;       ///< CU_POINTER_ATTRIBUTE_MEMORY_TYPE
inline constexpr int kPointerAttrIsManaged = 8;        ///< CU_POINTER_ATTRIBUTE_IS_MANAGED
inline constexpr int kPointerAttrDeviceOrdinal = 9;    ///< CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL
inline constexpr int kPointerAttrIsLegacyIpcCapable = 10;  ///< CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE
inline constexpr int kPointerAttrRangeStart = 11;      ///< CU_POINTER_ATTRIBUTE_RANGE_START_ADDR
inline constexpr int kPointerAttrRangeSize = 12;       ///< CU_POINTER_ATTRIBUTE_RANGE_SIZE
inline constexpr int kPointerAttrAllowedHandleTypes = 14;  ///< CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES

inline constexpr unsigned kMemoryTypeHost = 1;     ///< CU_MEMORYTYPE_HOST
inline constexpr unsigned kMemoryTypeDevice = 2;   ///< CU_MEMORYTYPE_DEVICE
inline constexpr unsigned kMemoryTypeUnified = 4;  ///< CU_MEMORYTYPE_UNIFIED

inline constexpr unsigned kMemHostRegisterPortable = 1;  ///< CU_MEMHOSTREGISTER_PORTABLE
inline constexpr unsigned kStreamNonBlocking = 1;        ///< CU_STREAM_NON_BLOCKING
inline constexpr unsigned kEventDisableTiming = 2;       ///< CU_EVENT_DISABLE_TIMING
inline constexpr unsigned kIpcMemLazyEnablePeerAccess = 1;  ///< CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS

inline constexpr int kHandleTypePosixFd = 1;  ///< CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
inline constexpr int kHandleTypeFabric = 8;   ///< CU_MEM_HANDLE_TYPE_FABRIC
inline constexpr int kMemAllocationTypePinned = 1;  ///< CU_MEM_ALLOCATION_TYPE_PINNED
inline constexpr int kMemLocationTypeDevice = 1;    ///< CU_MEM_LOCATION_TYPE_DEVICE
inline constexpr int kMemAccessReadWrite = 3;       ///< CU_MEM_ACCESS_FLAGS_PROT_READWRITE
inline constexpr int kMemAllocGranularityMinimum = 0;  ///< CU_MEM_ALLOC_GRANULARITY_MINIMUM

inline constexpr int kDevAttrPciBusId = 33;     ///< CU_DEVICE_ATTRIBUTE_PCI_BUS_ID
inline constexpr int kDevAttrPciDeviceId = 34;  ///< CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID
inline constexpr int kDevAttrPciDomainId = 50;  ///< CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID
inline constexpr int kDevAttrVmmSupported = 102;  ///< CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED
inline constexpr int kDevAttrPosixFdSupported = 103;  ///< CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED
inline constexpr int kDevAttrFabricSupported = 128;  ///< CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED

// --- signatures (the driver's own; the symbol each is bound to is in
// cu_driver.cc, with the _v2 names cuda.h's #defines select) ---------------------
using InitFn = Result (*)(unsigned flags);
using DriverGetVersionFn = Result (*)(int* version);
using GetErrorNameFn = Result (*)(Result error, const char** name);
using GetErrorStringFn = Result (*)(Result error, const char** text);
using DeviceGetCountFn = Result (*)(int* count);
using DeviceGetFn = Result (*)(Device* device, int ordinal);
using DeviceGetAttributeFn = Result (*)(int* value, int attribute, Device device);
using DeviceGetUuidFn = Result (*)(Uuid* uuid, Device device);
using DeviceCanAccessPeerFn = Result (*)(int* can, Device device, Device peer);
using DevicePrimaryCtxRetainFn = Result (*)(Context* ctx, Device device);
using DevicePrimaryCtxReleaseFn = Result (*)(Device device);
using CtxPushCurrentFn = Result (*)(Context ctx);
using CtxPopCurrentFn = Result (*)(Context* ctx);
using CtxGetCurrentFn = Result (*)(Context* ctx);
using CtxGetDeviceFn = Result (*)(Device* device);
using PointerGetAttributeFn = Result (*)(void* data, int attribute, DevicePtr ptr);
using PointerGetAttributesFn = Result (*)(unsigned count, int* attributes, void** data,
                                          DevicePtr ptr);
using MemHostRegisterFn = Result (*)(void* p, size_t size, unsigned flags);
using MemHostUnregisterFn = Result (*)(void* p);
using MemAllocHostFn = Result (*)(void** p, size_t size);
using MemFreeHostFn = Result (*)(void* p);
using MemGetAddressRangeFn = Result (*)(DevicePtr* base, size_t* size, DevicePtr ptr);
using StreamCreateFn = Result (*)(Stream* stream, unsigned flags);
using StreamDestroyFn = Result (*)(Stream stream);
using StreamSynchronizeFn = Result (*)(Stream stream);
using EventCreateFn = Result (*)(Event* event, unsigned flags);
using EventDestroyFn = Result (*)(Event event);
using EventRecordFn = Result (*)(Event event, Stream stream);
using EventQueryFn = Result (*)(Event event);
using MemcpyAsyncFn = Result (*)(DevicePtr dst, DevicePtr src, size_t size, Stream stream);
using IpcGetMemHandleFn = Result (*)(IpcMemHandle* handle, DevicePtr ptr);
using IpcOpenMemHandleFn = Result (*)(DevicePtr* ptr, IpcMemHandle handle, unsigned flags);
using IpcCloseMemHandleFn = Result (*)(DevicePtr ptr);
using MemRetainAllocationHandleFn = Result (*)(MemHandle* handle, void* ptr);
using MemReleaseFn = Result (*)(MemHandle handle);
using MemExportToShareableHandleFn = Result (*)(void* shareable, MemHandle handle, int type,
                                                unsigned long long flags);
using MemImportFromShareableHandleFn = Result (*)(MemHandle* handle, void* shareable, int type);
using MemGetAllocationPropertiesFromHandleFn = Result (*)(MemAllocationProp* prop,
                                                          MemHandle handle);
using MemAddressReserveFn = Result (*)(DevicePtr* ptr, size_t size, size_t alignment,
                                       DevicePtr addr, unsigned long long flags);
using MemAddressFreeFn = Result (*)(DevicePtr ptr, size_t size);
using MemMapFn = Result (*)(DevicePtr ptr, size_t size, size_t offset, MemHandle handle,
                            unsigned long long flags);
using MemUnmapFn = Result (*)(DevicePtr ptr, size_t size);
using MemSetAccessFn = Result (*)(DevicePtr ptr, size_t size, const MemAccessDesc* desc,
                                  size_t count);

}  // namespace mc::uct::cuda::cu
