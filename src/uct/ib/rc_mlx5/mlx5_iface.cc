// SPDX-License-Identifier: Apache-2.0
// rc_mlx5 iface: completion queues polled from their CQE buffers.
#include "uct/ib/rc_mlx5/mlx5_iface.h"

#include <endian.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "ucs/log/log.h"
#include "uct/ib/base/mlx5_layout.h"
#include "uct/ib/rc_mlx5/mlx5_wq.h"

namespace mc::uct::ib::mlx5 {

Result<std::unique_ptr<rc::RcIface>> Mlx5Iface::create(IbMd* md, size_t dev_index,
                                                       const rc::RcConfig& config,
                                                       const IfaceParams& params) {
  std::unique_ptr<Mlx5Iface> iface(new Mlx5Iface(md, dev_index, config, params));
  MC_ASSIGN_OR_RETURN(uint32_t ip, rc::oob_address(config.oob_addr, iface->dev().gid()));
  MC_RETURN_IF_ERROR(iface->init(ip));
  for (ibv_cq* cq : iface->send_cqs()) MC_RETURN_IF_ERROR(iface->cq_open(cq));
  MC_RETURN_IF_ERROR(iface->cq_open(iface->recv_cq()));
  return std::unique_ptr<rc::RcIface>(std::move(iface));
}

uint32_t Mlx5Iface::max_wqe_bbs(const rc::RcConfig& c) {
  // ctrl + raddr + one data segment per SGE, or an inline segment.
  const uint64_t bytes = std::max<uint64_t>(2 * kSegSize + c.max_sge * kSegSize,
                                            2 * kSegSize + ((4 + c.max_inline + 15) & ~15ull));
  return static_cast<uint32_t>((bytes + 63) / 64);
}

Status Mlx5Iface::cq_open(ibv_cq* cq) {
  Cq c;
  const VerbsOps& ops = dev().ops();
  const int rc = ops.mlx5_cq_info ? ops.mlx5_cq_info(cq, &c.info) : EOPNOTSUPP;
  if (rc != 0) {
    MC_LOG(error) << "rc_mlx5: mlx5dv_init_obj of a CQ on " << dev().name() << ": "
                  << std::strerror(rc);
    return Status::IoError;
  }
  if ((c.info.cqe_size != 64 && c.info.cqe_size != 128) || c.info.cqe_cnt == 0 ||
      (c.info.cqe_cnt & (c.info.cqe_cnt - 1)) != 0 || !c.info.buf || !c.info.dbrec) {
    MC_LOG(error) << "rc_mlx5: unsupported CQ layout on " << dev().name() << ": " << c.info.cqe_cnt
                  << " CQEs of " << c.info.cqe_size << " bytes";
    return Status::Unsupported;
  }
  cqs_[cq] = c;
  return Status::Ok;
}

Result<std::unique_ptr<rc::RcWq>> Mlx5Iface::wq_open(ibv_qp* qp) {
  MC_ASSIGN_OR_RETURN(std::unique_ptr<Mlx5Wq> wq,
                      Mlx5Wq::create(dev().ops(), qp, config().max_wr, max_wqe_bbs(config())));
  return std::unique_ptr<rc::RcWq>(std::move(wq));
}

IfaceAttr Mlx5Iface::query() const {
  IfaceAttr a = rc::RcIface::query();
  // No provider call per post and poll: a WQE written and a CQE read.
  a.latency.c -= 100e-9;
  a.overhead = 40e-9;
  return a;
}

bool Mlx5Iface::decode(const uint8_t* cqe, ibv_wc* wc) {
  const Cqe c = read_cqe(cqe);
  *wc = ibv_wc{};
  wc->qp_num = c.qpn;
  rc::RcQp* qp = find_qp(c.qpn);
  auto* wq = qp ? static_cast<Mlx5Wq*>(&qp->wq()) : nullptr;
  switch (c.opcode) {
    case kCqeReq:
    case kCqeReqErr:
      wc->status = c.opcode == kCqeReq ? IBV_WC_SUCCESS : syndrome_status(c.syndrome);
      wc->vendor_err = c.vendor_syndrome;
      wc->wr_id = wq ? wq->send_wr_id(c.wqe_counter) : 0;
      return true;
    case 1:  // responder: RDMA WRITE with immediate
    case kCqeRespSend:
    case 3:  // SEND with immediate
    case 4:  // SEND with invalidate
    case kCqeRespErr:
      wc->status = c.opcode == kCqeRespErr ? syndrome_status(c.syndrome) : IBV_WC_SUCCESS;
      wc->opcode = IBV_WC_RECV;
      wc->byte_len = c.byte_count;
      if (wq && !wq->recv_pop(c.wqe_counter, &wc->wr_id)) {
        MC_LOG(warn) << "rc_mlx5: a receive CQE for QP " << c.qpn << " with no receive posted";
        return false;
      }
      return true;
    default:
      MC_LOG(warn) << "rc_mlx5: ignored a CQE of opcode " << int(c.opcode) << " on QP " << c.qpn;
      return false;
  }
}

int Mlx5Iface::poll_cq(ibv_cq* cq, int n, ibv_wc* wc) {
  auto it = cqs_.find(cq);
  if (it == cqs_.end()) return 0;
  Cq& c = it->second;
  const uint32_t cnt = c.info.cqe_cnt;
  int got = 0;
  uint32_t consumed = 0;
  while (got < n) {
    // A 128-byte CQE carries the 64-byte one in its second half.
    const uint8_t* cqe =
        c.info.buf + size_t{c.ci & (cnt - 1)} * c.info.cqe_size + (c.info.cqe_size - kCqeSize);
    const uint8_t op_own = __atomic_load_n(&cqe[63], __ATOMIC_ACQUIRE);
    const bool owner = ((c.ci / cnt) & 1) != 0;
    if ((op_own >> 4) == kCqeInvalid || ((op_own & 1) != 0) != owner) break;
    ++c.ci;
    ++consumed;
    if (decode(cqe, &wc[got])) ++got;
  }
  if (consumed) {
    // Tells the device these CQEs may be overwritten.
    __atomic_store_n(&c.info.dbrec[0], htobe32(c.ci & 0xffffff), __ATOMIC_RELEASE);
  }
  return got;
}

}  // namespace mc::uct::ib::mlx5

namespace mc::uct::ib::mlx5 {

int Mlx5Iface::cq_arm(ibv_cq* cq) {
  auto it = cqs_.find(cq);
  if (it == cqs_.end() || !it->second.info.cq_uar) return EOPNOTSUPP;
  Cq& c = it->second;
  const uint32_t word = (c.arm_sn & 3) << 28 | kCqArmNext | (c.ci & 0xffffff);
  __atomic_store_n(&c.info.dbrec[1], htobe32(word), __ATOMIC_RELEASE);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  // One 64-bit store (MMIO on a NIC, watched by the soft provider's device).
  __atomic_store_n(reinterpret_cast<uint64_t*>(c.info.cq_uar + kCqDoorbell),
                   htobe64(uint64_t{word} << 32 | c.info.cqn), __ATOMIC_RELAXED);
  return 0;
}

void Mlx5Iface::cq_event(ibv_cq* cq) {
  auto it = cqs_.find(cq);
  if (it != cqs_.end()) ++it->second.arm_sn;
}

}  // namespace mc::uct::ib::mlx5
