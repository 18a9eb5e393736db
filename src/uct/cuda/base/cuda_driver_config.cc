// SPDX-License-Identifier: Apache-2.0
// The "cuda driver" configuration table.
#include "uct/cuda/base/cuda_driver_config.h"

namespace mc::uct::cuda {

const ucs::config::Table& cuda_driver_config_table() {
  using ucs::config::field;
  static const ucs::config::Table table(
      "cuda driver", "CUDA_",
      {field("DRIVER", "libcuda.so.1",
             "The CUDA driver library the CUDA transports (cuda_copy, cuda_ipc) load at run "
             "time (dlopen: a name searched as usual, or a path). They are built without the "
             "CUDA toolkit and never linked to it; without this library they load, offer no "
             "device and say why (mc_info -d).",
             &CudaDriverConfig::library, ucs::config::string_parser())});
  return table;
}

std::string cuda_driver_library(const ucs::config::Sources& sources, std::string* error) {
  CudaDriverConfig config{"libcuda.so.1"};
  std::string e;
  if (cuda_driver_config_table().read(&config, sources, &e) != ucs::Status::Ok) {
    if (error) *error = e;
    return "libcuda.so.1";
  }
  return config.library;
}

}  // namespace mc::uct::cuda
