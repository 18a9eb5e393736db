// SPDX-License-Identifier: Apache-2.0
// Compiled only where configure found the CUDA toolkit's cuda.h: checks at
// compile time that cu_api.h declares what cuda.h does (constants, struct
// layouts, and each signature's arity and argument kinds and sizes), so the
// declarations the modules build with elsewhere cannot drift from the ABI.
// Nothing here runs.
#include <cuda.h>

#include <cstddef>
#include <type_traits>

#include "uct/cuda/base/cu_api.h"

namespace mc::uct::cuda::cu {

namespace {

// 1 pointer, 2 integer or enum, 3 class (by value), 0 other.
template <typename T>
constexpr int kind() {
  if constexpr (std::is_pointer_v<T>) return 1;
  if constexpr (std::is_integral_v<T> || std::is_enum_v<T>) return 2;
  if constexpr (std::is_class_v<T>) return 3;
  return 0;
}

template <typename A, typename B>
constexpr bool same_arg() {
  return kind<A>() == kind<B>() && sizeof(A) == sizeof(B);
}

template <typename A, typename B>
struct SameAbi : std::false_type {};
template <typename RA, typename... PA, typename RB, typename... PB>
  requires(sizeof...(PA) == sizeof...(PB))
struct SameAbi<RA (*)(PA...), RB (*)(PB...)>
    : std::bool_constant<same_arg<RA, RB>() && (same_arg<PA, PB>() && ...)> {};

#define MC_CU_CHECK_FN(ours, theirs)                                    \
  static_assert(SameAbi<ours, decltype(&theirs)>::value,               \
                #ours " does not match cuda.h's " #theirs)

MC_CU_CHECK_FN(InitFn, cuInit);
MC_CU_CHECK_FN(DriverGetVersionFn, cuDriverGetVersion);
MC_CU_CHECK_FN(GetErrorNameFn, cuGetErrorName);
MC_CU_CHECK_FN(GetErrorStringFn, cuGetErrorString);
MC_CU_CHECK_FN(DeviceGetCountFn, cuDeviceGetCount);
MC_CU_CHECK_FN(DeviceGetFn, cuDeviceGet);
MC_CU_CHECK_FN(DeviceGetAttributeFn, cuDeviceGetAttribute);
MC_CU_CHECK_FN(DeviceGetUuidFn, cuDeviceGetUuid_v2);
MC_CU_CHECK_FN(DeviceCanAccessPeerFn, cuDeviceCanAccessPeer);
MC_CU_CHECK_FN(DevicePrimaryCtxRetainFn, cuDevicePrimaryCtxRetain);
MC_CU_CHECK_FN(DevicePrimaryCtxReleaseFn, cuDevicePrimaryCtxRelease_v2);
MC_CU_CHECK_FN(CtxPushCurrentFn, cuCtxPushCurrent_v2);
MC_CU_CHECK_FN(CtxPopCurrentFn, cuCtxPopCurrent_v2);
MC_CU_CHECK_FN(CtxGetCurrentFn, cuCtxGetCurrent);
MC_CU_CHECK_FN(CtxGetDeviceFn, cuCtxGetDevice);
MC_CU_CHECK_FN(PointerGetAttributeFn, cuPointerGetAttribute);
MC_CU_CHECK_FN(MemHostRegisterFn, cuMemHostRegister_v2);
MC_CU_CHECK_FN(MemHostUnregisterFn, cuMemHostUnregister);
MC_CU_CHECK_FN(MemAllocHostFn, cuMemAllocHost_v2);
MC_CU_CHECK_FN(MemFreeHostFn, cuMemFreeHost);
MC_CU_CHECK_FN(MemGetAddressRangeFn, cuMemGetAddressRange_v2);
MC_CU_CHECK_FN(StreamCreateFn, cuStreamCreate);
MC_CU_CHECK_FN(StreamDestroyFn, cuStreamDestroy_v2);
MC_CU_CHECK_FN(StreamSynchronizeFn, cuStreamSynchronize);
MC_CU_CHECK_FN(EventCreateFn, cuEventCreate);
MC_CU_CHECK_FN(EventDestroyFn, cuEventDestroy_v2);
MC_CU_CHECK_FN(EventRecordFn, cuEventRecord);
MC_CU_CHECK_FN(EventQueryFn, cuEventQuery);
MC_CU_CHECK_FN(MemcpyAsyncFn, cuMemcpyAsync);
MC_CU_CHECK_FN(IpcGetMemHandleFn, cuIpcGetMemHandle);
MC_CU_CHECK_FN(IpcOpenMemHandleFn, cuIpcOpenMemHandle_v2);
MC_CU_CHECK_FN(IpcCloseMemHandleFn, cuIpcCloseMemHandle);
MC_CU_CHECK_FN(MemRetainAllocationHandleFn, cuMemRetainAllocationHandle);
MC_CU_CHECK_FN(MemReleaseFn, cuMemRelease);
MC_CU_CHECK_FN(MemExportToShareableHandleFn, cuMemExportToShareableHandle);
MC_CU_CHECK_FN(MemImportFromShareableHandleFn, cuMemImportFromShareableHandle);
MC_CU_CHECK_FN(MemGetAllocationPropertiesFromHandleFn, cuMemGetAllocationPropertiesFromHandle);
MC_CU_CHECK_FN(MemAddressReserveFn, cuMemAddressReserve);
MC_CU_CHECK_FN(MemAddressFreeFn, cuMemAddressFree);
MC_CU_CHECK_FN(MemMapFn, cuMemMap);
MC_CU_CHECK_FN(MemUnmapFn, cuMemUnmap);
MC_CU_CHECK_FN(MemSetAccessFn, cuMemSetAccess);

#undef MC_CU_CHECK_FN

// Types and layouts.
static_assert(sizeof(Result) == sizeof(CUresult));
static_assert(sizeof(Device) == sizeof(CUdevice));
static_assert(sizeof(DevicePtr) == sizeof(CUdeviceptr));
static_assert(sizeof(MemHandle) == sizeof(CUmemGenericAllocationHandle));
static_assert(sizeof(IpcMemHandle) == sizeof(CUipcMemHandle) && kIpcHandleSize == CU_IPC_HANDLE_SIZE);
static_assert(sizeof(FabricHandle) == sizeof(CUmemFabricHandle));
static_assert(sizeof(Uuid) == sizeof(CUuuid));
static_assert(sizeof(MemLocation) == sizeof(CUmemLocation));
static_assert(sizeof(MemAllocationProp) == sizeof(CUmemAllocationProp));
static_assert(offsetof(MemAllocationProp, requested_handle_types) ==
              offsetof(CUmemAllocationProp, requestedHandleTypes));
static_assert(offsetof(MemAllocationProp, location) == offsetof(CUmemAllocationProp, location));
static_assert(offsetof(MemAllocationProp, alloc_flags) ==
              offsetof(CUmemAllocationProp, allocFlags));
static_assert(sizeof(MemAccessDesc) == sizeof(CUmemAccessDesc));
static_assert(offsetof(MemAccessDesc, flags) == offsetof(CUmemAccessDesc, flags));

// Values.
static_assert(kSuccess == CUDA_SUCCESS);
static_assert(kErrorInvalidValue == CUDA_ERROR_INVALID_VALUE);
static_assert(kErrorOutOfMemory == CUDA_ERROR_OUT_OF_MEMORY);
static_assert(kErrorNotInitialized == CUDA_ERROR_NOT_INITIALIZED);
static_assert(kErrorNoDevice == CUDA_ERROR_NO_DEVICE);
static_assert(kErrorInvalidDevice == CUDA_ERROR_INVALID_DEVICE);
static_assert(kErrorInvalidContext == CUDA_ERROR_INVALID_CONTEXT);
static_assert(kErrorMapFailed == CUDA_ERROR_MAP_FAILED);
static_assert(kErrorAlreadyMapped == CUDA_ERROR_ALREADY_MAPPED);
static_assert(kErrorInvalidHandle == CUDA_ERROR_INVALID_HANDLE);
static_assert(kErrorNotFound == CUDA_ERROR_NOT_FOUND);
static_assert(kErrorNotReady == CUDA_ERROR_NOT_READY);
static_assert(kErrorHostMemoryAlreadyRegistered == CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
static_assert(kErrorNotPermitted == CUDA_ERROR_NOT_PERMITTED);
static_assert(kErrorNotSupported == CUDA_ERROR_NOT_SUPPORTED);
static_assert(kErrorSystemNotReady == CUDA_ERROR_SYSTEM_NOT_READY);
static_assert(kPointerAttrContext == CU_POINTER_ATTRIBUTE_CONTEXT);
static_assert(kPointerAttrMemoryType == CU_POINTER_ATTRIBUTE_MEMORY_TYPE);
static_assert(kPointerAttrIsManaged == CU_POINTER_ATTRIBUTE_IS_MANAGED);
static_assert(kPointerAttrDeviceOrdinal == CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL);
static_assert(kPointerAttrIsLegacyIpcCapable == CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE);
static_assert(kPointerAttrRangeStart == CU_POINTER_ATTRIBUTE_RANGE_START_ADDR);
static_assert(kPointerAttrRangeSize == CU_POINTER_ATTRIBUTE_RANGE_SIZE);
static_assert(kPointerAttrAllowedHandleTypes == CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES);
static_assert(kMemoryTypeHost == CU_MEMORYTYPE_HOST);
static_assert(kMemoryTypeDevice == CU_MEMORYTYPE_DEVICE);
static_assert(kMemoryTypeUnified == CU_MEMORYTYPE_UNIFIED);
static_assert(kMemHostRegisterPortable == CU_MEMHOSTREGISTER_PORTABLE);
static_assert(kStreamNonBlocking == CU_STREAM_NON_BLOCKING);
static_assert(kEventDisableTiming == CU_EVENT_DISABLE_TIMING);
static_assert(kIpcMemLazyEnablePeerAccess == CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
static_assert(kHandleTypePosixFd == CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
static_assert(kHandleTypeFabric == CU_MEM_HANDLE_TYPE_FABRIC);
static_assert(kMemAllocationTypePinned == CU_MEM_ALLOCATION_TYPE_PINNED);
static_assert(kMemLocationTypeDevice == CU_MEM_LOCATION_TYPE_DEVICE);
static_assert(kMemAccessReadWrite == CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
static_assert(kMemAllocGranularityMinimum == CU_MEM_ALLOC_GRANULARITY_MINIMUM);
static_assert(kDevAttrPciBusId == CU_DEVICE_ATTRIBUTE_PCI_BUS_ID);
static_assert(kDevAttrPciDeviceId == CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID);
static_assert(kDevAttrPciDomainId == CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID);
static_assert(kDevAttrVmmSupported == CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED);
static_assert(kDevAttrPosixFdSupported ==
              CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED);
static_assert(kDevAttrFabricSupported == CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED);

}  // namespace

}  // namespace mc::uct::cuda::cu
