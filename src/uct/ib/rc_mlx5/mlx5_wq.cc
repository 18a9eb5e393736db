// SPDX-License-Identifier: Apache-2.0
// rc_mlx5 work queue: WQE writer and doorbell.
#include "uct/ib/rc_mlx5/mlx5_wq.h"

#include <endian.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "ucs/log/log.h"
#include "uct/ib/base/mlx5_layout.h"

namespace mc::uct::ib::mlx5 {

namespace {

constexpr uint32_t kBb = 64;             // WQE basic block
constexpr uint32_t kMaxWqeBytes = 1024;  // mlx5's largest send WQE (ds is 6 bits)

uint8_t wqe_opcode(ibv_wr_opcode op, bool* ok) {
  *ok = true;
  switch (op) {
    case IBV_WR_RDMA_WRITE: return kOpRdmaWrite;
    case IBV_WR_RDMA_READ: return kOpRdmaRead;
    case IBV_WR_SEND: return kOpSend;
    default: *ok = false; return 0;
  }
}

}  // namespace

ucs::Result<std::unique_ptr<Mlx5Wq>> Mlx5Wq::create(const VerbsOps& ops, ibv_qp* qp, size_t max_wr,
                                                    uint32_t max_bbs) {
  Mlx5QpInfo info;
  const int rc = ops.mlx5_qp_info ? ops.mlx5_qp_info(qp, &info) : EOPNOTSUPP;
  if (rc != 0) {
    MC_LOG(error) << "rc_mlx5: mlx5dv_init_obj of QP " << qp->qp_num << ": " << std::strerror(rc);
    return ucs::Status::IoError;
  }
  if (info.sq_stride != kBb || info.sq_wqe_cnt == 0 ||
      (info.sq_wqe_cnt & (info.sq_wqe_cnt - 1)) != 0 || info.sq_wqe_cnt < max_wr * max_bbs ||
      !info.dbrec || !info.bf_reg || !info.rq_buf || info.rq_wqe_cnt == 0 ||
      (info.rq_wqe_cnt & (info.rq_wqe_cnt - 1)) != 0 || info.rq_stride < kSegSize ||
      (info.rq_stride & (info.rq_stride - 1)) != 0) {
    MC_LOG(error) << "rc_mlx5: QP " << qp->qp_num << " has a send queue of " << info.sq_wqe_cnt
                  << " blocks of " << info.sq_stride << " bytes; " << max_wr << " WQEs of "
                  << max_bbs << " blocks (MC_MAX_WR, MC_MAX_SGE, MC_MAX_INLINE) do not fit, or a"
                  << " receive queue of " << info.rq_wqe_cnt << " WQEs of " << info.rq_stride
                  << " bytes";
    return ucs::Status::Unsupported;
  }
  return std::unique_ptr<Mlx5Wq>(new Mlx5Wq(qp, info, max_bbs));
}

int Mlx5Wq::post_send(ibv_send_wr& wr) {
  bool ok = false;
  const uint8_t opcode = wqe_opcode(wr.opcode, &ok);
  if (!ok || wr.num_sge < 0) return EINVAL;
  alignas(8) uint8_t wqe[kMaxWqeBytes];  // built here, copied into the ring
  size_t off = kSegSize;
  if (wr.opcode != IBV_WR_SEND) {
    write_raddr(wqe + off, wr.wr.rdma.remote_addr, wr.wr.rdma.rkey);
    off += kSegSize;
  }
  const size_t limit = std::min<size_t>(kMaxWqeBytes, size_t{max_bbs_} * kBb);
  if (wr.send_flags & IBV_SEND_INLINE) {
    size_t total = 0;
    for (int i = 0; i < wr.num_sge; ++i) total += wr.sg_list[i].length;
    if (wr.opcode == IBV_WR_RDMA_READ || off + 4 + total > limit) return EINVAL;
    write_inline_header(wqe + off, static_cast<uint32_t>(total));
    uint8_t* p = wqe + off + 4;
    for (int i = 0; i < wr.num_sge; ++i) {
      std::memcpy(p, reinterpret_cast<const void*>(wr.sg_list[i].addr), wr.sg_list[i].length);
      p += wr.sg_list[i].length;
    }
    const size_t end = off + ((4 + total + kSegSize - 1) & ~(kSegSize - 1));
    std::memset(p, 0, wqe + end - p);
    off = end;
  } else {
    for (int i = 0; i < wr.num_sge; ++i) {
      const ibv_sge& s = wr.sg_list[i];
      if (s.length == 0) continue;  // a byte count of 0 means 2 GiB to the device
      if (off + kSegSize > limit) return EINVAL;
      write_data(wqe + off, s.length, s.lkey, s.addr);
      off += kSegSize;
    }
  }
  const uint32_t bbs = static_cast<uint32_t>((off + kBb - 1) / kBb);
  std::memset(wqe + off, 0, size_t{bbs} * kBb - off);  // the rest of the last block
  const uint8_t ce = (wr.send_flags & IBV_SEND_SIGNALED) ? kCqUpdate : 0;
  write_ctrl(wqe, pi_, opcode, 0, qp_->qp_num, static_cast<uint8_t>(off / kSegSize), ce);
  // Into the ring, wrapping at its end as the device reads it.
  const size_t size = size_t{info_.sq_wqe_cnt} * kBb;
  const size_t at = size_t{pi_ & (info_.sq_wqe_cnt - 1)} * kBb;
  const size_t first = std::min<size_t>(size - at, size_t{bbs} * kBb);
  std::memcpy(info_.sq_buf + at, wqe, first);
  if (first < size_t{bbs} * kBb) std::memcpy(info_.sq_buf, wqe + first, bbs * kBb - first);
  wr_ids_[pi_ & (info_.sq_wqe_cnt - 1)] = wr.wr_id;
  pi_ = static_cast<uint16_t>(pi_ + bbs);
  ring_doorbell(wqe);
  return 0;
}

void Mlx5Wq::ring_doorbell(const uint8_t* ctrl) {
  // The WQE is in memory before the doorbell record says so, and the record
  // before the doorbell register tells the device to look.
  std::atomic_thread_fence(std::memory_order_release);
  __atomic_store_n(&info_.dbrec[1], htobe32(pi_), __ATOMIC_RELEASE);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  uint64_t first8;
  std::memcpy(&first8, ctrl, sizeof(first8));
  // One 64-bit store: the first 8 bytes of the control segment.
  __atomic_store_n(reinterpret_cast<uint64_t*>(info_.bf_reg + bf_offset_), first8,
                   __ATOMIC_RELAXED);
  if (info_.bf_size) bf_offset_ ^= info_.bf_size;
}

int Mlx5Wq::post_recv(ibv_recv_wr& wr) {
  if (static_cast<uint16_t>(rq_pi_ - rq_ci_) >= info_.rq_wqe_cnt) return ENOMEM;
  const size_t index = rq_pi_ & (info_.rq_wqe_cnt - 1);
  if (!write_recv_wqe(info_.rq_buf + index * info_.rq_stride, info_.rq_stride, wr.sg_list,
                      wr.num_sge)) {
    return EINVAL;
  }
  rx_wr_ids_[index] = wr.wr_id;
  rq_pi_ = static_cast<uint16_t>(rq_pi_ + 1);
  // The WQE is in memory before the receive doorbell record counts it.
  std::atomic_thread_fence(std::memory_order_release);
  __atomic_store_n(&info_.dbrec[0], htobe32(rq_pi_), __ATOMIC_RELEASE);
  return 0;
}

bool Mlx5Wq::recv_pop(uint16_t wqe_counter, uint64_t* wr_id) {
  if (rq_ci_ == rq_pi_) return false;
  if (wqe_counter != rq_ci_) {
    MC_LOG(warn) << "rc_mlx5: QP " << qp_->qp_num << " completed receive WQE " << wqe_counter
                 << ", expected " << rq_ci_;
  }
  *wr_id = rx_wr_ids_[wqe_counter & (info_.rq_wqe_cnt - 1)];
  rq_ci_ = static_cast<uint16_t>(rq_ci_ + 1);
  return true;
}

}  // namespace mc::uct::ib::mlx5
