// SPDX-License-Identifier: Apache-2.0
// The cuda_ipc transport's knobs (MC_CUDA_IPC_*).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "ucs/config/table.h"

namespace mc::uct::cuda {

/// Which handle a VMM allocation is exported with.
enum class FabricMode { Auto, Yes, No };

struct CudaIpcConfig {
  uint64_t streams;          ///< CUDA streams per device
  uint64_t max_outstanding;  ///< copies in flight per iface before NoResource
  uint64_t cache_size;       ///< mapped exports no rkey holds, kept for reuse
  FabricMode fabric;         ///< fabric handles for VMM allocations
  std::string imex_channel;  ///< the IMEX channel device fabric handles need
  std::string nvml;          ///< the NVML library (fabric cluster UUID and clique id)
};

const ucs::config::Table& cuda_ipc_config_table();

}  // namespace mc::uct::cuda
