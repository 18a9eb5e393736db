// SPDX-License-Identifier: Apache-2.0
// The part of NVIDIA's cufile.h (GPUDirect Storage) that nvmeof calls, declared
// here because the header is not installed where mc is built; the library is
// dlopen'd (nvmeof_cufile.cc). Layouts and values are cufile.h's, as published
// in the "cuFile API Reference Guide" (docs.nvidia.com/gpudirect-storage,
// 4.1.1 "Declarations and Definitions": CUfileError_t, CUfileFileHandleType,
// CUfileDescr_t, CUfileHandle_t; 4.1.1's CUfileOpError list, CUFILEOP_BASE_ERR
// 5000), and its cuFileRead / cuFileWrite entries for their returns.
#pragma once

#include <sys/types.h>

#include <cstddef>

namespace mc::uct::nvmeof::cufile {

/// CUfileOpError: 0, or CUFILEOP_BASE_ERR (5000) plus a small number.
using OpError = int;
inline constexpr OpError kSuccess = 0;             ///< CU_FILE_SUCCESS
inline constexpr OpError kBaseErr = 5000;          ///< CUFILEOP_BASE_ERR
inline constexpr OpError kCudaDriverError = 5011;  ///< CU_FILE_CUDA_DRIVER_ERROR

/// CUfileError_t: `struct CUfileError { CUfileOpError err; CUresult cu_err; }`
/// (two 32-bit enums; returned by value).
struct Error {
  OpError err;
  int cu_err;  ///< CUresult, meaningful when err is CU_FILE_CUDA_DRIVER_ERROR
};

/// enum CUfileFileHandleType
inline constexpr int kHandleTypeOpaqueFd = 1;  ///< CU_FILE_HANDLE_TYPE_OPAQUE_FD

/// CUfileDescr_t: `{ CUfileFileHandleType type; union { int fd; void* handle; }
/// handle; const CUfileFSOps_t* fs_ops; }` (24 bytes on LP64).
struct Descr {
  int type;
  union {
    int fd;
    void* handle;
  } handle;
  const void* fs_ops;  ///< const CUfileFSOps_t*: null, the kernel's file system
};
static_assert(sizeof(Descr) == 24 && offsetof(Descr, handle) == 8 && offsetof(Descr, fs_ops) == 16,
              "CUfileDescr_t layout (LP64)");

/// CUfileHandle_t
using Handle = void*;

// Entry points, with cufile.h's signatures. cuFileRead/cuFileWrite return the
// bytes moved (fewer at the end of a file), -1 with errno set for a file
// system error, or the negation of a CUfileOpError.
using DriverOpenFn = Error (*)();                              ///< cuFileDriverOpen
using DriverCloseFn = Error (*)();                             ///< cuFileDriverClose(_v2)
using HandleRegisterFn = Error (*)(Handle* fh, Descr* descr);  ///< cuFileHandleRegister
using HandleDeregisterFn = void (*)(Handle fh);                ///< cuFileHandleDeregister
/// cuFileRead(fh, bufPtr_base, size, file_offset, bufPtr_offset)
using ReadFn = ssize_t (*)(Handle fh, void* base, size_t size, off_t file_offset, off_t buf_offset);
/// cuFileWrite(fh, bufPtr_base, size, file_offset, bufPtr_offset)
using WriteFn = ssize_t (*)(Handle fh, const void* base, size_t size, off_t file_offset,
                            off_t buf_offset);

}  // namespace mc::uct::nvmeof::cufile
