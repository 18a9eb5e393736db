// SPDX-License-Identifier: Apache-2.0
// The knobs every verbs transport shares: which provider, which devices and
// ports, and the path attributes (GID, MTU, traffic class, P_Key). Names
// follow the Mooncake Transfer Engine's (MC_GID_INDEX, MC_IB_PORT, ...).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "ucs/config/parser.h"
#include "ucs/config/table.h"

namespace mc::uct::ib {

enum class Provider { Verbs, Soft };

/// How GPU (CUDA) memory is registered (MC_IB_GPU_REG).
enum class GpuRegMode { Auto, DmaBuf, PeerMem, Off };

struct IbConfig {
  Provider provider;                      ///< MC_IB_PROVIDER
  std::string soft_library;               ///< MC_IB_SOFT_LIBRARY
  std::string soft_fabric;                ///< MC_IB_SOFT_FABRIC
  uint64_t soft_devices;                  ///< MC_IB_SOFT_DEVICES
  ucs::config::AllowList devices;         ///< MC_IB_DEVICES
  std::optional<uint64_t> port;           ///< MC_IB_PORT; nullopt: the first active port
  std::optional<uint64_t> gid_index;      ///< MC_GID_INDEX; nullopt: 3 or the best RoCE v2 GID
  std::optional<uint64_t> mtu;            ///< MC_MTU in bytes; nullopt: the port's active MTU
  std::optional<uint64_t> traffic_class;  ///< MC_IB_TC; nullopt (-1): the device's default
  uint64_t pkey_index;                    ///< MC_PKEY_INDEX
  uint64_t service_level;                 ///< MC_IB_SL
  uint64_t reg_threads;                   ///< MC_IB_REG_THREADS
  GpuRegMode gpu_reg;                     ///< MC_IB_GPU_REG
  std::string cuda_driver;                ///< MC_IB_CUDA_DRIVER
  std::string sys_module;                 ///< MC_IB_SYS_MODULE
  bool relaxed_ordering;                  ///< MC_IB_PCI_RELAXED_ORDERING
};

/// The "ib devices" table (prefix "": the knobs keep Mooncake's names).
const ucs::config::Table& ib_config_table();

}  // namespace mc::uct::ib
