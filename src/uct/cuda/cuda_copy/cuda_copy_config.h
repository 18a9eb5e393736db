// SPDX-License-Identifier: Apache-2.0
// The cuda_copy transport's knobs (MC_CUDA_COPY_*).
#pragma once

#include <cstddef>
#include <cstdint>

#include "ucs/config/table.h"

namespace mc::uct::cuda {

struct CudaCopyConfig {
  uint64_t streams;          ///< CUDA streams per device
  size_t seg_size;           ///< pinned bounce buffer: the largest short / bcopy
  uint64_t bounce_count;     ///< most bounce buffers per iface
  uint64_t max_outstanding;  ///< copies in flight per iface before NoResource
  bool reg_host;             ///< mem_reg pins pageable host memory
};

const ucs::config::Table& cuda_copy_config_table();

}  // namespace mc::uct::cuda
