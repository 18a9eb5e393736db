// SPDX-License-Identifier: Apache-2.0
// The CUDA driver entry points the ib memory domain calls to register GPU
// memory, as one table of function pointers filled by dlopen/dlsym from a
// driver library (libcuda.so.1, or a fake one in tests): never linked, and
// built without the CUDA toolkit (the few ABI constants are spelled here).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "ucs/status/status.h"

namespace mc::uct::ib {

/// The CUDA driver's ABI types and constants this code uses (cuda.h's values).
namespace cu {
using Result = int;          ///< CUresult; 0 is CUDA_SUCCESS
using DevicePtr = uint64_t;  ///< CUdeviceptr
inline constexpr Result kSuccess = 0;
inline constexpr int kPointerAttrMemoryType = 2;   ///< CU_POINTER_ATTRIBUTE_MEMORY_TYPE
inline constexpr int kPointerAttrIsManaged = 8;    ///< CU_POINTER_ATTRIBUTE_IS_MANAGED
inline constexpr int kPointerAttrRangeStart = 11;  ///< CU_POINTER_ATTRIBUTE_RANGE_START_ADDR
inline constexpr int kPointerAttrRangeSize = 12;   ///< CU_POINTER_ATTRIBUTE_RANGE_SIZE
inline constexpr unsigned kMemoryTypeDevice = 2;   ///< CU_MEMORYTYPE_DEVICE
inline constexpr int kRangeHandleDmaBufFd = 1;     ///< CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD
}  // namespace cu

/// The subset of the CUDA driver API used for registration; signatures are
/// the driver's own.
struct CudaDriverOps {
  std::string library;                           ///< the path it was loaded from
  cu::Result (*init)(unsigned flags) = nullptr;  ///< cuInit
  cu::Result (*get_error_name)(cu::Result error, const char** name) = nullptr;  ///< cuGetErrorName
  /// cuPointerGetAttribute
  cu::Result (*pointer_get_attribute)(void* data, int attribute, cu::DevicePtr ptr) = nullptr;
  /// cuMemGetHandleForAddressRange (CUDA 11.7+); null in an older driver.
  cu::Result (*mem_get_handle_for_address_range)(void* handle, cu::DevicePtr ptr, size_t size,
                                                 int type, unsigned long long flags) = nullptr;

  /// "CUDA_ERROR_INVALID_VALUE", or "CUresult <n>" when the driver has no name.
  std::string error_name(cu::Result error) const;
};

/// The table of the driver library `library` (a name dlopen searches, or a
/// path), loaded and cuInit'ed once per library per process; NoDevice with
/// `why` set ("libcuda.so.1 not found: <dlerror>", "cuInit:
/// CUDA_ERROR_NO_DEVICE", "libcuda.so.1 lacks symbol cuPointerGetAttribute")
/// when it cannot be used. Thread-safe.
ucs::Result<const CudaDriverOps*> cuda_driver_load(const std::string& library, std::string* why);

}  // namespace mc::uct::ib
