// SPDX-License-Identifier: Apache-2.0
// The cuda_ipc transport's configuration table.
#include "uct/cuda/cuda_ipc/cuda_ipc_config.h"

namespace mc::uct::cuda {

const ucs::config::Table& cuda_ipc_config_table() {
  using ucs::config::field;
  static const ucs::config::Table table(
      "cuda_ipc transport", "CUDA_IPC_",
      {field("STREAMS", "4",
             "CUDA streams per device that an iface spreads its copies over; each copy's "
             "completion is an event polled by progress().",
             &CudaIpcConfig::streams, ucs::config::uint_parser(1, 64)),
       field("MAX_OUTSTANDING", "1024",
             "Copies an iface keeps in flight before new operations return NoResource.",
             &CudaIpcConfig::max_outstanding, ucs::config::uint_parser(1, 1 << 20)),
       field("CACHE_SIZE", "64",
             "Mapped peer allocations that no rkey holds, kept so that an rkey unpacked again "
             "maps nothing; the oldest is closed beyond this. An allocation its owner "
             "unregisters is closed whatever this says.",
             &CudaIpcConfig::cache_size, ucs::config::uint_parser(0, 1 << 20)),
       field("FABRIC", "auto",
             "Fabric handles (CU_MEM_HANDLE_TYPE_FABRIC, multi-node NVLink) for VMM "
             "allocations that allow them: auto (when the driver and the IMEX channel support "
             "them, else a POSIX fd), y (only fabric handles: registration fails naming why "
             "they are unavailable; what MC_FORCE_MNNVL sets), n (never).",
             &CudaIpcConfig::fabric,
             ucs::config::enum_parser<FabricMode>(
                 {{"auto", FabricMode::Auto}, {"y", FabricMode::Yes}, {"n", FabricMode::No}})),
       field("IMEX_CHANNEL", "/dev/nvidia-caps-imex-channels/channel0",
             "The IMEX channel device that fabric handles need (the nvidia-imex service makes "
             "it); without it fabric handles are reported unavailable, naming this path.",
             &CudaIpcConfig::imex_channel, ucs::config::string_parser()),
       field("NVML", "libnvidia-ml.so.1",
             "The NVML library cuda_ipc loads at run time to learn each GPU's NVLink fabric "
             "(cluster UUID and clique id): peers on other hosts are reachable by fabric "
             "handles when both are the same.",
             &CudaIpcConfig::nvml, ucs::config::string_parser())});
  return table;
}

}  // namespace mc::uct::cuda
