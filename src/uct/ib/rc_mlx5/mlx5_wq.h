// SPDX-License-Identifier: Apache-2.0
// An rc_mlx5 queue pair's work queue: send WQEs written straight into the
// send queue buffer the device reads (control, remote address, data or
// inline segments), announced by the doorbell record and the doorbell
// (BlueFlame) register; receive WQEs (data segments) written straight into
// the receive queue buffer, announced by the receive doorbell record.
#pragma once

#include <memory>
#include <vector>

#include "ucs/status/status.h"
#include "uct/ib/rc/rc_wq.h"

namespace mc::uct::ib::mlx5 {

class Mlx5Wq : public rc::RcWq {
 public:
  /// The work queue of `qp` (from the provider's mlx5_qp_info). Unsupported
  /// when its send queue cannot hold `max_wr` WQEs of `max_bbs` basic blocks.
  static ucs::Result<std::unique_ptr<Mlx5Wq>> create(const VerbsOps& ops, ibv_qp* qp, size_t max_wr,
                                                     uint32_t max_bbs);

  /// Writes the WQE and rings the doorbell. EINVAL for an opcode or a size
  /// the WQE cannot carry.
  int post_send(ibv_send_wr& wr) override;
  int post_recv(ibv_recv_wr& wr) override;

  /// The wr_id of the send WQE a CQE's wqe counter names.
  uint64_t send_wr_id(uint16_t wqe_counter) const {
    return wr_ids_[wqe_counter & (info_.sq_wqe_cnt - 1)];
  }
  /// The wr_id of the receive WQE a receive CQE's wqe counter names, which
  /// frees its slot (an RC receive queue completes in order); false when
  /// none is posted.
  bool recv_pop(uint16_t wqe_counter, uint64_t* wr_id);

 private:
  Mlx5Wq(ibv_qp* qp, const Mlx5QpInfo& info, uint32_t max_bbs)
      : qp_(qp),
        info_(info),
        max_bbs_(max_bbs),
        wr_ids_(info.sq_wqe_cnt, 0),
        rx_wr_ids_(info.rq_wqe_cnt, 0) {}
  void ring_doorbell(const uint8_t* ctrl);

  ibv_qp* qp_;
  Mlx5QpInfo info_;
  uint32_t max_bbs_;
  uint16_t pi_ = 0;                  // producer index in basic blocks
  uint32_t bf_offset_ = 0;           // alternates between the two BlueFlame buffers
  std::vector<uint64_t> wr_ids_;     // by basic block of the WQE's start
  uint16_t rq_pi_ = 0;               // receive WQEs posted
  uint16_t rq_ci_ = 0;               // receive WQEs completed
  std::vector<uint64_t> rx_wr_ids_;  // by receive WQE index
};

}  // namespace mc::uct::ib::mlx5
