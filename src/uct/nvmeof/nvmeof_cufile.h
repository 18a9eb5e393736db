// SPDX-License-Identifier: Apache-2.0
// cuFile (GPUDirect Storage) for the nvmeof transport: the library loaded at
// run time (MC_NVMEOF_CUFILE, MC_NVMEOF_CUFILE_LIB), its driver opened while
// a memory domain uses it, and one GPU <-> file transfer run through it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ucs/status/status.h"
#include "uct/nvmeof/cufile_abi.h"

namespace mc::uct::nvmeof {

/// The cuFile entry points of one library, its driver open. Shared by the
/// memory domains of a process that name the same library; the last one to
/// go closes the driver (the library stays loaded). Thread safety: the
/// entry points are cuFile's (thread-safe); the object is immutable.
class Cufile {
 public:
  /// Loads `library` and opens its driver, or returns null with `*why` set:
  /// dlerror()'s text, "<library> lacks symbol <name>", or
  /// "cuFileDriverOpen: <error>".
  static std::shared_ptr<const Cufile> open(const std::string& library, std::string* why);
  ~Cufile();
  Cufile(const Cufile&) = delete;
  Cufile& operator=(const Cufile&) = delete;

  const std::string& library() const { return library_; }

  /// cuFileHandleRegister of `fd`; null with `*why` set on an error.
  cufile::Handle handle_register(int fd, std::string* why) const;
  void handle_deregister(cufile::Handle fh) const { ops_.handle_deregister(fh); }

  /// Moves `length` bytes between GPU memory at `buffer` and the file at
  /// `offset`, looping over partial transfers. Ok, or IoError after logging
  /// the file, offset, length and cuFile's error text (a negative
  /// CUfileOpError, errno for -1, or "no progress" for a short transfer).
  ucs::Status transfer(cufile::Handle fh, bool write, void* buffer, size_t length, uint64_t offset,
                       const std::string& path) const;

  /// "CU_FILE_IO_NOT_SUPPORTED (5008)", or "CUfileOpError 5099" for a code
  /// this file does not name.
  static std::string error_text(cufile::OpError err);

 private:
  Cufile() = default;

  struct Ops {
    cufile::DriverOpenFn driver_open = nullptr;
    cufile::DriverCloseFn driver_close = nullptr;
    cufile::HandleRegisterFn handle_register = nullptr;
    cufile::HandleDeregisterFn handle_deregister = nullptr;
    cufile::ReadFn read = nullptr;
    cufile::WriteFn write = nullptr;
  };
  std::string library_;
  Ops ops_;
};

}  // namespace mc::uct::nvmeof
