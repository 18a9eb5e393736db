// SPDX-License-Identifier: Apache-2.0
// The ib devices configuration table.
#include "uct/ib/base/ib_config.h"

namespace mc::uct::ib {

namespace {

ucs::config::Parser<uint64_t> mtu_parser() {
  ucs::config::Parser<uint64_t> p = ucs::config::uint_parser(256, 4096);
  p.syntax = "one of 256, 512, 1024, 2048, 4096";
  auto inner = p.parse;
  p.parse = [inner](std::string_view text, uint64_t* out) {
    uint64_t v = 0;
    if (inner(text, &v) != ucs::Status::Ok || (v & (v - 1)) != 0) {
      return ucs::Status::InvalidParam;
    }
    *out = v;
    return ucs::Status::Ok;
  };
  return p;
}

// -1 (Mooncake's default): leave the traffic class to the device.
ucs::config::Parser<std::optional<uint64_t>> traffic_class_parser() {
  const ucs::config::Parser<uint64_t> inner = ucs::config::uint_parser(0, 255);
  ucs::config::Parser<std::optional<uint64_t>> p;
  p.syntax = "-1 (the device's default), or " + inner.syntax;
  p.parse = [inner](std::string_view text, std::optional<uint64_t>* out) {
    if (ucs::config::trim(text) == "-1") {
      *out = std::nullopt;
      return ucs::Status::Ok;
    }
    uint64_t v = 0;
    MC_RETURN_IF_ERROR(inner.parse(text, &v));
    *out = v;
    return ucs::Status::Ok;
  };
  p.format = [inner](const std::optional<uint64_t>& v) {
    return v ? inner.format(*v) : std::string("-1");
  };
  return p;
}

}  // namespace

const ucs::config::Table& ib_config_table() {
  using ucs::config::field;
  static const ucs::config::Table table(
      "ib devices", "",
      {field("IB_PROVIDER", "verbs",
             "Verbs provider: verbs (libibverbs.so.1 from rdma-core, loaded at run time, and "
             "libmlx5.so.1 for rc_mlx5) or soft (the software provider for tests, from "
             "MC_IB_SOFT_LIBRARY: devices "
             "mcsoft0.. in user space, RDMA through shared memory and process_vm_readv/writev, "
             "mlx5-shaped queues run by a device thread for rc_mlx5; never for production).",
             &IbConfig::provider,
             ucs::config::enum_parser<Provider>(
                 {{"verbs", Provider::Verbs}, {"soft", Provider::Soft}})),
       field("IB_SOFT_LIBRARY", "libmc_ib_soft.so",
             "The soft provider's library, loaded when MC_IB_PROVIDER=soft (a path, or a name "
             "the dynamic loader searches for). It is a test library of the build tree "
             "(test/gtest/.libs/libmc_ib_soft.so, built by make check), never installed.",
             &IbConfig::soft_library, ucs::config::string_parser()),
       field("IB_SOFT_FABRIC", "default",
             "Name of the soft provider's fabric (/dev/shm/mc-ibsoft-<name>); processes on "
             "the same fabric reach each other.",
             &IbConfig::soft_fabric, ucs::config::string_parser()),
       field("IB_SOFT_DEVICES", "2", "Number of devices the soft provider offers.",
             &IbConfig::soft_devices, ucs::config::uint_parser(1, 8)),
       field("IB_DEVICES", "all", "RDMA devices to use, e.g. \"mlx5_0,mlx5_1\" or \"^mlx5_2\".",
             &IbConfig::devices, ucs::config::allow_list_parser()),
       field("IB_PORT", "auto", "Port of each device to use; auto: the first active port.",
             &IbConfig::port, ucs::config::auto_parser(ucs::config::uint_parser(1, 255))),
       field("GID_INDEX", "auto",
             "GID table index for RoCE; auto: index 3 when it holds a GID, else the first "
             "RoCE v2 GID (from sysfs), else 0.",
             &IbConfig::gid_index, ucs::config::auto_parser(ucs::config::uint_parser(0, 255))),
       field("MTU", "auto",
             "Path MTU of the queue pairs in bytes; auto: the port's active MTU. A value above "
             "the active MTU is lowered to it.",
             &IbConfig::mtu, ucs::config::auto_parser(mtu_parser())),
       field("IB_TC", "-1",
             "Traffic class of the GRH (RoCE DSCP << 2); -1: the device's default (the GRH "
             "carries 0, which the device's configured default traffic class replaces).",
             &IbConfig::traffic_class, traffic_class_parser()),
       field("PKEY_INDEX", "0", "P_Key table index of the queue pairs.", &IbConfig::pkey_index,
             ucs::config::uint_parser(0, 65535)),
       field("IB_SL", "0", "Service level of the queue pairs.", &IbConfig::service_level,
             ucs::config::uint_parser(0, 15)),
       field("IB_REG_THREADS", "8",
             "Most threads one batch registration (mem_reg_batch) registers buffers with at "
             "once; 1 registers them one after the other.",
             &IbConfig::reg_threads, ucs::config::uint_parser(1, 64)),
       field("IB_GPU_REG", "auto",
             "How GPU (CUDA device) memory is registered: dmabuf (a dma-buf of the range from "
             "the CUDA driver, cuMemGetHandleForAddressRange, then ibv_reg_dmabuf_mr of "
             "rdma-core 34+), peermem (plain ibv_reg_mr, served by the nvidia_peermem or "
             "nv_peer_mem kernel module), auto (dmabuf when the CUDA driver and the verbs library "
             "both have it, else peermem when the module is loaded) or off (host memory only). "
             "mc_info -d says which path is active, or why none is.",
             &IbConfig::gpu_reg,
             ucs::config::enum_parser<GpuRegMode>({{"auto", GpuRegMode::Auto},
                                                   {"dmabuf", GpuRegMode::DmaBuf},
                                                   {"peermem", GpuRegMode::PeerMem},
                                                   {"off", GpuRegMode::Off}})),
       field("IB_CUDA_DRIVER", "libcuda.so.1",
             "The CUDA driver library GPU registration loads at run time (dlopen: a name "
             "searched as usual, or a path).",
             &IbConfig::cuda_driver, ucs::config::string_parser()),
       field("IB_SYS_MODULE", "/sys/module",
             "Directory of the loaded kernel modules, where the peer-memory path looks for "
             "nvidia_peermem and nv_peer_mem (a fixture tree in tests).",
             &IbConfig::sys_module, ucs::config::string_parser()),
       field("IB_PCI_RELAXED_ORDERING", "n",
             "Register memory with PCIe relaxed ordering (IBV_ACCESS_RELAXED_ORDERING, through "
             "ibv_reg_mr_iova2 of rdma-core 28+), which can speed up the NIC's DMA; a device "
             "without it ignores the flag. Without rdma-core support it stays off, with a "
             "warning. mc_info -d says whether it is on.",
             &IbConfig::relaxed_ordering, ucs::config::bool_parser())});
  return table;
}

}  // namespace mc::uct::ib
