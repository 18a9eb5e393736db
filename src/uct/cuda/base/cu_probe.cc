// SPDX-License-Identifier: Apache-2.0
// The configured CUDA driver and its devices.
#include "uct/cuda/base/cu_probe.h"

#include "ucs/log/log.h"
#include "uct/cuda/base/cuda_driver_config.h"

namespace mc::uct::cuda {

const CuDriver* cu_probe(const ucs::config::Sources* sources, std::string* why) {
  std::string error;
  ucs::Result<ucs::config::Sources> process = ucs::config::Sources{};
  if (!sources) {
    process = ucs::config::Sources::from_process(&error);
    if (!process.ok()) process = ucs::config::Sources{};
    sources = &*process;
  }
  const std::string library = cuda_driver_library(*sources, &error);
  if (!error.empty()) {
    *why = "bad configuration: " + error;
    return nullptr;
  }
  std::string load_error;
  ucs::Result<const CuDriver*> driver = cu_driver_load(library, &load_error);
  if (!driver.ok()) {
    *why = "no CUDA device: " + load_error;
    return nullptr;
  }
  int count = 0;
  const cu::Result rc = (*driver)->device_get_count(&count);
  if (rc != cu::kSuccess) {
    *why = "no CUDA device: cuDeviceGetCount: " + (*driver)->error_string(rc);
    return nullptr;
  }
  if (count == 0) {
    *why = "no CUDA device: cuDeviceGetCount found none";
    return nullptr;
  }
  return *driver;
}

const CuDriver* CuProbe::operator()(const ucs::config::Sources* sources, std::string* why) const {
  std::string reason;
  const CuDriver* driver = cu_probe(sources, &reason);
  std::lock_guard guard(lock_);
  if (!driver && reason != logged_) {
    MC_LOG(info) << name_ << ": " << reason;
    logged_ = reason;
  }
  if (why) *why = reason;
  return driver;
}

}  // namespace mc::uct::cuda
