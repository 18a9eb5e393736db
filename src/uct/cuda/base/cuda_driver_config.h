// SPDX-License-Identifier: Apache-2.0
// The knob the CUDA modules share: which driver library they load.
#pragma once

#include <string>

#include "ucs/config/table.h"

namespace mc::uct::cuda {

struct CudaDriverConfig {
  std::string library;  ///< MC_CUDA_DRIVER
};

/// "cuda driver" (MC_CUDA_*): compiled into each CUDA module; the registry
/// keeps one table of a name.
const ucs::config::Table& cuda_driver_config_table();

/// The driver library this process's configuration names (MC_CUDA_DRIVER,
/// else libcuda.so.1); `*error` set and the default returned on a bad value.
std::string cuda_driver_library(const ucs::config::Sources& sources, std::string* error = nullptr);

}  // namespace mc::uct::cuda
