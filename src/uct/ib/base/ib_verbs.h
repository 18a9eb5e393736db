// SPDX-License-Identifier: Apache-2.0
// The verbs entry points the ib transports call, as one table of function
// pointers: filled from libibverbs.so.1 by dlopen/dlsym (never linked), or
// by the software provider for tests, a library also loaded at run time.
#pragma once

#include <infiniband/verbs.h>

#include <string>

#include "ucs/status/status.h"

namespace mc::uct::ib {

/// A queue pair's send and receive queues as an mlx5 device reads them (mlx5dv_qp's fields).
struct Mlx5QpInfo {
  uint8_t* sq_buf = nullptr;           ///< sq_wqe_cnt x sq_stride bytes
  uint32_t sq_wqe_cnt = 0;             ///< basic blocks; a power of two
  uint32_t sq_stride = 0;              ///< 64
  volatile uint32_t* dbrec = nullptr;  ///< [0] receive, [1] send counter (be32)
  uint8_t* rq_buf = nullptr;           ///< rq_wqe_cnt x rq_stride bytes of receive WQEs
  uint32_t rq_wqe_cnt = 0;             ///< a power of two
  uint32_t rq_stride = 0;              ///< bytes per receive WQE; a power of two >= 16
  uint8_t* bf_reg = nullptr;           ///< doorbell / BlueFlame register
  uint32_t bf_size = 0;                ///< BlueFlame buffer size; 0: doorbell only
};

/// A completion queue as an mlx5 device writes it (mlx5dv_cq's fields).
struct Mlx5CqInfo {
  uint8_t* buf = nullptr;              ///< cqe_cnt x cqe_size bytes
  uint32_t cqe_cnt = 0;                ///< a power of two
  uint32_t cqe_size = 0;               ///< 64
  volatile uint32_t* dbrec = nullptr;  ///< [0] consumer index, [1] arm (be32)
  uint8_t* cq_uar = nullptr;           ///< UAR page of the CQ doorbell (arming)
  uint32_t cqn = 0;
};

/// The subset of libibverbs the transports use. Signatures are libibverbs'
/// own; the inline verbs (post_send, post_recv, poll_cq, req_notify_cq) are
/// reached through the same table so a provider can replace them.
struct VerbsOps {
  const char* provider = "";  ///< "verbs" or "soft"

  ibv_device** (*get_device_list)(int* num_devices) = nullptr;
  void (*free_device_list)(ibv_device** list) = nullptr;
  const char* (*get_device_name)(ibv_device* device) = nullptr;
  ibv_context* (*open_device)(ibv_device* device) = nullptr;
  int (*close_device)(ibv_context* context) = nullptr;
  int (*query_device)(ibv_context* context, ibv_device_attr* attr) = nullptr;
  int (*query_port)(ibv_context* context, uint8_t port, ibv_port_attr* attr) = nullptr;
  int (*query_gid)(ibv_context* context, uint8_t port, int index, ibv_gid* gid) = nullptr;
  ibv_pd* (*alloc_pd)(ibv_context* context) = nullptr;
  int (*dealloc_pd)(ibv_pd* pd) = nullptr;
  ibv_mr* (*reg_mr)(ibv_pd* pd, void* addr, size_t length, int access) = nullptr;
  int (*dereg_mr)(ibv_mr* mr) = nullptr;
  /// ibv_reg_dmabuf_mr (rdma-core 34+): registers `length` bytes at `offset`
  /// of the dma-buf `fd` (GPU memory), addressed by peers as `iova`. Null
  /// when the provider has none: no dma-buf registration.
  ibv_mr* (*reg_dmabuf_mr)(ibv_pd* pd, uint64_t offset, size_t length, uint64_t iova, int fd,
                           int access) = nullptr;
  /// ibv_reg_mr_iova2 (rdma-core 28+): the registration that takes the
  /// optional access flags (IBV_ACCESS_RELAXED_ORDERING), dropping those the
  /// device lacks. Null when the provider has none: no relaxed ordering.
  ibv_mr* (*reg_mr_iova2)(ibv_pd* pd, void* addr, size_t length, uint64_t iova,
                          unsigned int access) = nullptr;
  ibv_comp_channel* (*create_comp_channel)(ibv_context* context) = nullptr;
  int (*destroy_comp_channel)(ibv_comp_channel* channel) = nullptr;
  ibv_cq* (*create_cq)(ibv_context* context, int cqe, void* cq_context, ibv_comp_channel* channel,
                       int comp_vector) = nullptr;
  int (*destroy_cq)(ibv_cq* cq) = nullptr;
  int (*get_cq_event)(ibv_comp_channel* channel, ibv_cq** cq, void** cq_context) = nullptr;
  void (*ack_cq_events)(ibv_cq* cq, unsigned int nevents) = nullptr;
  int (*req_notify_cq)(ibv_cq* cq, int solicited_only) = nullptr;
  int (*poll_cq)(ibv_cq* cq, int num_entries, ibv_wc* wc) = nullptr;
  ibv_qp* (*create_qp)(ibv_pd* pd, ibv_qp_init_attr* attr) = nullptr;
  int (*modify_qp)(ibv_qp* qp, ibv_qp_attr* attr, int attr_mask) = nullptr;
  int (*destroy_qp)(ibv_qp* qp) = nullptr;
  int (*post_send)(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad_wr) = nullptr;
  int (*post_recv)(ibv_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) = nullptr;

  // mlx5 direct verbs: null when the provider has none (libmlx5.so.1 absent).
  /// mlx5dv_is_supported.
  bool (*mlx5_supported)(ibv_device* device) = nullptr;
  /// mlx5dv_init_obj of a QP / a CQ: its queue buffers and doorbell records.
  /// 0 or an errno. From then on the caller posts and polls them directly.
  int (*mlx5_qp_info)(ibv_qp* qp, Mlx5QpInfo* out) = nullptr;
  int (*mlx5_cq_info)(ibv_cq* cq, Mlx5CqInfo* out) = nullptr;
  const char* mlx5_why = "";  ///< why the mlx5 entries are null
};

/// The libibverbs table, loaded once per process. NoDevice with `why` set
/// ("libibverbs.so.1: cannot open shared object file", "missing symbol
/// ibv_reg_mr") when rdma-core is not usable at run time.
ucs::Result<const VerbsOps*> verbs_ops_libibverbs(std::string* why);

/// The software provider for tests (test/gtest/uct/ib/soft, not part of the
/// product) is a library the modules load at run time, as they load
/// libibverbs: MC_IB_SOFT_LIBRARY, entry point kSoftVerbsEntry. `abi` is
/// kVerbsOpsAbi of the caller; a library built with another table refuses
/// it. The first call fixes the fabric and device count of the process.
using SoftVerbsEntry = const VerbsOps* (*)(uint32_t abi, const char* fabric, unsigned devices,
                                           std::string* why);
inline constexpr const char* kSoftVerbsEntry = "mc_ib_soft_verbs_ops";
/// Changes with the layout of VerbsOps (its size, and a version for changes
/// that keep the size).
inline constexpr uint32_t kVerbsOpsAbi = (1u << 16) | static_cast<uint32_t>(sizeof(VerbsOps));

/// The soft provider's table from the library at `path` (loaded once per
/// path). NoDevice with `why` (the path and dlerror, a missing entry point,
/// another table layout) when it cannot be used.
ucs::Result<const VerbsOps*> verbs_ops_soft_library(const std::string& path,
                                                    const std::string& fabric, unsigned devices,
                                                    std::string* why);

/// Text of an ibv_wc_status ("remote access error", ...).
const char* wc_status_string(ibv_wc_status status);

}  // namespace mc::uct::ib
