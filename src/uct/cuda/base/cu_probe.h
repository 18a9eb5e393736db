// SPDX-License-Identifier: Apache-2.0
// What a CUDA component asks first: the configured driver, and devices.
#pragma once

#include <string>

#include "ucs/config/sources.h"
#include "uct/cuda/base/cu_driver.h"

namespace mc::uct::cuda {

/// The driver MC_CUDA_DRIVER (of `sources`, or of the process when null) names, when it loads and sees at least one
/// device; else null with `*why` set: "no CUDA device: libcuda.so.1 not
/// found: <dlerror>", "no CUDA device: cuInit: CUDA_ERROR_NO_DEVICE: ...",
/// "no CUDA device: cuDeviceGetCount found none".
const CuDriver* cu_probe(const ucs::config::Sources* sources, std::string* why);

}  // namespace mc::uct::cuda
