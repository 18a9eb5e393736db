// SPDX-License-Identifier: Apache-2.0
// The CUDA driver reached through dlopen/dlsym: the ib modules never link
// libcuda, so they load (and register host memory only) without a GPU.
#include "uct/ib/base/cuda_driver.h"

#include <map>
#include <memory>
#include <mutex>

#include "uct/base/dl_lib.h"

namespace mc::uct::ib {

namespace {

struct Loaded {
  CudaDriverOps ops;
  std::string why;  // empty when usable
};

std::unique_ptr<Loaded> load(const std::string& library) {
  auto l = std::make_unique<Loaded>();
  std::string dl_error;
  void* lib = dl_open(library, &dl_error);
  if (!lib) {
    l->why = library + " not found: " + dl_error;
    return l;
  }
  CudaDriverOps& o = l->ops;
  o.library = library;
  const bool ok = dl_bind(lib, library, "cuInit", &o.init, &l->why) &&
                  dl_bind(lib, library, "cuGetErrorName", &o.get_error_name, &l->why) &&
                  dl_bind(lib, library, "cuPointerGetAttribute", &o.pointer_get_attribute, &l->why);
  if (!ok) {
    dlclose(lib);
    return l;
  }
  // Optional: a driver before CUDA 11.7 has no dma-buf export.
  o.mem_get_handle_for_address_range =
      dl_find<decltype(o.mem_get_handle_for_address_range)>(lib, "cuMemGetHandleForAddressRange");
  const cu::Result rc = o.init(0);
  if (rc != cu::kSuccess) {
    l->why = "cuInit: " + o.error_name(rc);
    return l;  // the library stays loaded: cuInit may have started driver threads
  }
  return l;  // the library stays loaded for the life of the process
}

}  // namespace

std::string CudaDriverOps::error_name(cu::Result error) const {
  const char* name = nullptr;
  if (get_error_name && get_error_name(error, &name) == cu::kSuccess && name) return name;
  return "CUresult " + std::to_string(error);
}

ucs::Result<const CudaDriverOps*> cuda_driver_load(const std::string& library, std::string* why) {
  // One entry per library ever asked for; entries are never removed, so the
  // pointers handed out stay valid.
  static std::mutex lock;
  static std::map<std::string, std::unique_ptr<Loaded>> loaded;
  std::lock_guard guard(lock);
  std::unique_ptr<Loaded>& l = loaded[library];
  if (!l) l = load(library);
  if (!l->why.empty()) {
    if (why) *why = l->why;
    return ucs::Status::NoDevice;
  }
  return &l->ops;
}

}  // namespace mc::uct::ib
