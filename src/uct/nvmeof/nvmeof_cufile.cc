// SPDX-License-Identifier: Apache-2.0
// cuFile reached through dlopen/dlsym: the module never links libcufile, so
// it loads, and moves host memory, where GPUDirect Storage is not installed.
#include "uct/nvmeof/nvmeof_cufile.h"

#include <cerrno>
#include <map>
#include <mutex>

#include "ucs/log/log.h"
#include "ucs/sys/sys.h"
#include "uct/base/dl_lib.h"

namespace mc::uct::nvmeof {

namespace {

// cufile.h's CUfileOpError names (CUFILEOP_BASE_ERR + n), those a data path
// or a registration returns; the rest print as numbers.
const std::map<cufile::OpError, const char*>& op_error_names() {
  static const std::map<cufile::OpError, const char*> names = {
      {0, "CU_FILE_SUCCESS"},
      {5001, "CU_FILE_DRIVER_NOT_INITIALIZED"},
      {5002, "CU_FILE_DRIVER_INVALID_PROPS"},
      {5003, "CU_FILE_DRIVER_UNSUPPORTED_LIMIT"},
      {5004, "CU_FILE_DRIVER_VERSION_MISMATCH"},
      {5005, "CU_FILE_DRIVER_VERSION_READ_ERROR"},
      {5006, "CU_FILE_DRIVER_CLOSING"},
      {5007, "CU_FILE_PLATFORM_NOT_SUPPORTED"},
      {5008, "CU_FILE_IO_NOT_SUPPORTED"},
      {5009, "CU_FILE_DEVICE_NOT_SUPPORTED"},
      {5010, "CU_FILE_NVFS_DRIVER_ERROR"},
      {5011, "CU_FILE_CUDA_DRIVER_ERROR"},
      {5012, "CU_FILE_CUDA_POINTER_INVALID"},
      {5013, "CU_FILE_CUDA_MEMORY_TYPE_INVALID"},
      {5014, "CU_FILE_CUDA_POINTER_RANGE_ERROR"},
      {5015, "CU_FILE_CUDA_CONTEXT_MISMATCH"},
      {5016, "CU_FILE_INVALID_MAPPING_SIZE"},
      {5017, "CU_FILE_INVALID_MAPPING_RANGE"},
      {5018, "CU_FILE_INVALID_FILE_TYPE"},
      {5019, "CU_FILE_INVALID_FILE_OPEN_FLAG"},
      {5020, "CU_FILE_DIO_NOT_SET"},
      {5022, "CU_FILE_INVALID_VALUE"},
      {5023, "CU_FILE_MEMORY_ALREADY_REGISTERED"},
      {5024, "CU_FILE_MEMORY_NOT_REGISTERED"},
      {5025, "CU_FILE_PERMISSION_DENIED"},
      {5026, "CU_FILE_DRIVER_ALREADY_OPEN"},
      {5027, "CU_FILE_HANDLE_NOT_REGISTERED"},
      {5028, "CU_FILE_HANDLE_ALREADY_REGISTERED"},
      {5029, "CU_FILE_DEVICE_NOT_FOUND"},
      {5030, "CU_FILE_INTERNAL_ERROR"},
      {5031, "CU_FILE_GETNEWFD_FAILED"},
      {5033, "CU_FILE_NVFS_SETUP_ERROR"},
      {5034, "CU_FILE_IO_DISABLED"},
  };
  return names;
}

std::string error_of(const cufile::Error& e) {
  std::string s = Cufile::error_text(e.err);
  if (e.err == cufile::kCudaDriverError) s += " (CUresult " + std::to_string(e.cu_err) + ")";
  return s;
}

}  // namespace

std::string Cufile::error_text(cufile::OpError err) {
  auto it = op_error_names().find(err);
  if (it == op_error_names().end()) return "CUfileOpError " + std::to_string(err);
  return std::string(it->second) + " (" + std::to_string(err) + ")";
}

std::shared_ptr<const Cufile> Cufile::open(const std::string& library, std::string* why) {
  // One open driver per library while some md holds it; a later md after
  // the last one went opens it again.
  static std::mutex lock;
  static std::map<std::string, std::weak_ptr<const Cufile>> opened;
  std::lock_guard guard(lock);
  if (std::shared_ptr<const Cufile> c = opened[library].lock()) return c;
  void* lib = dl_open(library, why);
  if (!lib) return nullptr;
  std::shared_ptr<Cufile> c(new Cufile());
  c->library_ = library;
  Ops& o = c->ops_;
  // cufile.h of CUDA 12.x declares cuFileDriverClose_v2 (cuFileDriverClose
  // is a macro for it); older libraries export only cuFileDriverClose.
  o.driver_close = dl_find<cufile::DriverCloseFn>(lib, "cuFileDriverClose_v2");
  const bool ok =
      dl_bind(lib, library, "cuFileDriverOpen", &o.driver_open, why) &&
      (o.driver_close || dl_bind(lib, library, "cuFileDriverClose", &o.driver_close, why)) &&
      dl_bind(lib, library, "cuFileHandleRegister", &o.handle_register, why) &&
      dl_bind(lib, library, "cuFileHandleDeregister", &o.handle_deregister, why) &&
      dl_bind(lib, library, "cuFileRead", &o.read, why) &&
      dl_bind(lib, library, "cuFileWrite", &o.write, why);
  if (!ok) {
    dlclose(lib);
    return nullptr;
  }
  const cufile::Error e = o.driver_open();
  if (e.err != cufile::kSuccess) {
    *why = "cuFileDriverOpen: " + error_of(e);
    c->ops_.driver_close = nullptr;  // nothing to close
    return nullptr;  // the library stays loaded: the driver may have started threads
  }
  opened[library] = c;
  return c;
}

Cufile::~Cufile() {
  if (!ops_.driver_close) return;
  const cufile::Error e = ops_.driver_close();
  if (e.err != cufile::kSuccess) {
    MC_LOG(warn) << "nvmeof: cuFileDriverClose of " << library_ << ": " << error_of(e);
  }
}

cufile::Handle Cufile::handle_register(int fd, std::string* why) const {
  cufile::Descr d{};
  d.type = cufile::kHandleTypeOpaqueFd;
  d.handle.fd = fd;
  d.fs_ops = nullptr;
  cufile::Handle fh = nullptr;
  const cufile::Error e = ops_.handle_register(&fh, &d);
  if (e.err != cufile::kSuccess) {
    *why = "cuFileHandleRegister: " + error_of(e);
    return nullptr;
  }
  return fh;
}

ucs::Status Cufile::transfer(cufile::Handle fh, bool write, void* buffer, size_t length,
                             uint64_t offset, const std::string& path) const {
  const char* op = write ? "cuFileWrite" : "cuFileRead";
  size_t done = 0;
  while (done < length) {
    const auto file_off = static_cast<off_t>(offset + done);
    const auto buf_off = static_cast<off_t>(done);
    errno = 0;
    const ssize_t n = write ? ops_.write(fh, buffer, length - done, file_off, buf_off)
                            : ops_.read(fh, buffer, length - done, file_off, buf_off);
    if (n > 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    std::string why;
    if (n == 0) {
      why = write ? "no progress (no space left?)" : "end of file (truncated?)";
    } else if (n == -1) {
      why = ucs::errno_string(errno);
    } else {
      why = error_text(static_cast<cufile::OpError>(-n));
    }
    MC_LOG(error) << "nvmeof: " << op << " of " << length << " bytes at offset " << offset << " of "
                  << path << " failed after " << done << " bytes: " << why;
    return ucs::Status::IoError;
  }
  return ucs::Status::Ok;
}

}  // namespace mc::uct::nvmeof
