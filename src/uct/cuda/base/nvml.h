// SPDX-License-Identifier: Apache-2.0
// The NVML entry points cuda_ipc asks about multi-node NVLink (the GPU's
// fabric: cluster UUID and clique id), declared here (nvml.h's ABI) and
// loaded at run time from libnvidia-ml.so.1 (MC_CUDA_IPC_NVML): built
// without the toolkit, and a machine without NVML says why.
#pragma once

#include <array>
#include <cstdint>
#include <string>

namespace mc::uct::cuda {

/// What NVML says of one GPU's NVLink fabric.
struct GpuFabric {
  std::array<uint8_t, 16> cluster_uuid{};
  uint32_t clique_id = 0;
  bool operator==(const GpuFabric&) const = default;
};

/// The fabric of the GPU whose CUDA UUID is `uuid`, through NVML library
/// `library`; false with `*why` set when NVML cannot be loaded, does not
/// know the GPU, or the GPU's fabric registration is not complete ("GPU
/// ... fabric state: not supported (not in an NVLink domain)").
bool nvml_gpu_fabric(const std::string& library, const std::array<uint8_t, 16>& uuid,
                     GpuFabric* out, std::string* why);

}  // namespace mc::uct::cuda
