// SPDX-License-Identifier: Apache-2.0
// The nvmeof transport's knobs (MC_NVMEOF_*).
#pragma once

#include <cstdint>
#include <string>

#include "ucs/config/table.h"

namespace mc::uct::nvmeof {

/// Whether GPU memory moves through cuFile (MC_NVMEOF_CUFILE).
enum class CufileMode { Auto, On, Off };

struct NvmeofConfig {
  uint64_t queue_depth;    ///< file operations in flight per iface
  bool io_uring;           ///< io_uring; off: preadv/pwritev in progress()
  bool direct_io;          ///< O_DIRECT when offset, sizes and addresses are aligned
  CufileMode cufile;       ///< MC_NVMEOF_CUFILE
  std::string cufile_lib;  ///< MC_NVMEOF_CUFILE_LIB
};

const ucs::config::Table& nvmeof_config_table();

}  // namespace mc::uct::nvmeof
