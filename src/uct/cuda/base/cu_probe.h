// SPDX-License-Identifier: Apache-2.0
// What a CUDA component asks first: the configured driver, and devices.
#pragma once

#include <mutex>
#include <string>

#include "ucs/config/sources.h"
#include "uct/cuda/base/cu_driver.h"

namespace mc::uct::cuda {

/// The driver MC_CUDA_DRIVER (of `sources`, or of the process when null) names, when it loads and
/// sees at least one device; else null with `*why` set: "no CUDA device: libcuda.so.1 not found:
/// <dlerror>", "no CUDA device: cuInit: CUDA_ERROR_NO_DEVICE: ...", "no CUDA device:
/// cuDeviceGetCount found none".
const CuDriver* cu_probe(const ucs::config::Sources* sources, std::string* why);

/// cu_probe() for one component: asked on first use rather than at load
/// time, so programs that never look at CUDA do not initialise it, and again
/// at each call, as MC_CUDA_DRIVER may name another library by then (each is
/// loaded once). A reason is logged at info once, "<name>: <reason>", until
/// it changes.
class CuProbe {
 public:
  explicit CuProbe(std::string name) : name_(std::move(name)) {}
  const CuDriver* operator()(const ucs::config::Sources* sources, std::string* why) const;

 private:
  const std::string name_;
  mutable std::mutex lock_;     // guards logged_
  mutable std::string logged_;  // the last reason logged
};

}  // namespace mc::uct::cuda
