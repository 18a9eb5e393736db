// SPDX-License-Identifier: Apache-2.0
// RC queue pair.
#include "uct/ib/rc/rc_qp.h"

#include <cerrno>
#include <cstring>
#include <random>

#include "ucs/log/log.h"
#include "uct/ib/rc/rc_iface.h"

namespace mc::uct::ib::rc {

namespace {

uint32_t random_psn() {
  static thread_local std::mt19937 rng{std::random_device{}()};
  return rng() & 0xffffff;
}

}  // namespace

Status wc_status_to_status(ibv_wc_status status) {
  switch (status) {
    case IBV_WC_SUCCESS: return Status::Ok;
    case IBV_WC_RETRY_EXC_ERR:
    case IBV_WC_RNR_RETRY_EXC_ERR: return Status::ConnectionReset;
    case IBV_WC_WR_FLUSH_ERR: return Status::Canceled;
    default: return Status::IoError;
  }
}

Result<std::unique_ptr<RcQp>> RcQp::create(RcIface* iface, size_t cq_index, RcEp* owner) {
  std::unique_ptr<RcQp> q(new RcQp(iface, cq_index, owner));
  const RcConfig& c = iface->config();
  const IbDevice& dev = iface->dev();
  ibv_qp_init_attr attr{};
  attr.send_cq = iface->send_cq(cq_index);
  attr.recv_cq = iface->recv_cq();
  attr.qp_type = IBV_QPT_RC;
  attr.cap.max_send_wr = static_cast<uint32_t>(c.max_wr);
  attr.cap.max_recv_wr = owner ? 1 : static_cast<uint32_t>(c.rx_queue_len);
  attr.cap.max_send_sge = static_cast<uint32_t>(c.max_sge);
  attr.cap.max_recv_sge = 1;
  attr.cap.max_inline_data = static_cast<uint32_t>(c.max_inline);
  q->qp_ = dev.ops().create_qp(dev.pd(), &attr);
  if (!q->qp_) {
    MC_LOG(error) << iface->tl_name() << ": ibv_create_qp on " << dev.name() << " (max_wr "
                  << c.max_wr << ", max_sge " << c.max_sge << ", max_inline " << c.max_inline
                  << "): " << std::strerror(errno);
    return Status::IoError;
  }
  MC_ASSIGN_OR_RETURN(q->wq_, iface->wq_open(q->qp_));
  q->sq_avail_ = c.max_wr;
  q->psn_ = random_psn();
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.pkey_index = static_cast<uint16_t>(static_cast<IbMd&>(iface->md()).ib_config().pkey_index);
  a.port_num = dev.port();
  a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
  const int rc = dev.ops().modify_qp(
      q->qp_, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
  if (rc != 0) {
    MC_LOG(error) << iface->tl_name() << ": QP " << q->qpn()
                  << " RESET->INIT: " << std::strerror(rc);
    return Status::IoError;
  }
  iface->qp_add(q.get());
  return q;
}

RcQp::~RcQp() {
  if (!qp_) return;
  iface_->qp_remove(this);
  // Nothing of this QP completes any more: give back what its ops held.
  iface_->cq_credit(cq_index_) += outstanding_.size();
  for (TxOp& op : outstanding_) {
    if (op.buf) iface_->tx_pool().put(op.buf);
  }
  wq_.reset();
  iface_->dev().ops().destroy_qp(qp_);
  for (void* buf : posted_rx_) iface_->rx_pool().put(buf);
}

Status RcQp::connect(const QpInfo& remote, const DeviceAddr& peer, uint16_t mtu) {
  const IbDevice& dev = iface_->dev();
  const IbConfig& ic = static_cast<IbMd&>(iface_->md()).ib_config();
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = mtu_from_bytes(std::min<size_t>(mtu, iface_->mtu_bytes()));
  a.dest_qp_num = remote.qpn;
  a.rq_psn = remote.psn;
  a.max_dest_rd_atomic = static_cast<uint8_t>(std::min(16, dev.device_attr().max_qp_rd_atom));
  a.min_rnr_timer = 12;
  a.ah_attr.port_num = dev.port();
  a.ah_attr.sl = static_cast<uint8_t>(ic.service_level);
  a.ah_attr.dlid = peer.lid;
  if (dev.is_roce() || peer.lid == 0) {
    a.ah_attr.is_global = 1;
    a.ah_attr.grh.dgid = peer.gid;
    a.ah_attr.grh.sgid_index = dev.gid_index();
    a.ah_attr.grh.hop_limit = 64;
    // MC_IB_TC=-1: 0 in the GRH, which the device's default traffic class
    // (its tc sysfs setting for RoCE) replaces.
    a.ah_attr.grh.traffic_class = static_cast<uint8_t>(ic.traffic_class.value_or(0));
  }
  int rc =
      dev.ops().modify_qp(qp_, &a,
                          IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                              IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
  if (rc != 0) {
    MC_LOG(error) << iface_->tl_name() << ": QP " << qpn() << " INIT->RTR to QP " << remote.qpn
                  << ": " << std::strerror(rc);
    return Status::IoError;
  }
  a = ibv_qp_attr{};
  a.qp_state = IBV_QPS_RTS;
  a.sq_psn = psn_;
  a.timeout = static_cast<uint8_t>(iface_->config().timeout);
  a.retry_cnt = static_cast<uint8_t>(iface_->config().retry_count);
  a.rnr_retry = 7;  // infinite: a receiver out of buffers slows the sender down
  a.max_rd_atomic = static_cast<uint8_t>(std::min(16, dev.device_attr().max_qp_init_rd_atom));
  rc = dev.ops().modify_qp(qp_, &a,
                           IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                               IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
  if (rc != 0) {
    MC_LOG(error) << iface_->tl_name() << ": QP " << qpn() << " RTR->RTS: " << std::strerror(rc);
    return Status::IoError;
  }
  return Status::Ok;
}

bool RcQp::has_credit() const {
  return sq_avail_ > 0 && iface_->cq_credit(cq_index_) > 0;
}

Status RcQp::post(ibv_send_wr& wr, TxOp op) {
  if (!has_credit()) return Status::NoResource;
  const RcConfig& c = iface_->config();
  op.sn = next_sn_++;
  // Signal when someone waits for this op, every tx_moderation WRs, and
  // when credits or buffers run low, so they always come back.
  const bool signal = op.comp || op.unpack || ++unsignalled_ >= c.tx_moderation ||
                      sq_avail_ <= c.tx_moderation ||
                      iface_->cq_credit(cq_index_) <= c.tx_moderation ||
                      iface_->tx_pool().available() <= c.tx_moderation;
  wr.wr_id = op.sn;
  wr.next = nullptr;
  if (signal) wr.send_flags |= IBV_SEND_SIGNALED;
  const int rc = wq_->post_send(wr);
  if (rc != 0) {
    --next_sn_;
    MC_LOG(error) << iface_->tl_name() << ": posting a send on QP " << qpn() << ": "
                  << std::strerror(rc);
    return Status::IoError;
  }
  if (signal) unsignalled_ = 0;
  last_signalled_ = signal;
  --sq_avail_;
  --iface_->cq_credit(cq_index_);
  outstanding_.push_back(op);
  return Status::Ok;
}

Status RcQp::post_signal() {
  if (last_signalled_ || outstanding_.empty()) return Status::Ok;
  ibv_send_wr wr{};
  wr.opcode = IBV_WR_RDMA_WRITE;  // zero length: touches no memory, checks no rkey
  wr.num_sge = 0;
  if (!has_credit()) return Status::NoResource;
  unsignalled_ = iface_->config().tx_moderation;  // forces the signal
  return post(wr, TxOp{});
}

void RcQp::complete(TxOp& op, Status status) {
  if (op.unpack && status == Status::Ok) op.unpack(op.arg, op.buf, op.length);
  if (op.comp) completion_update(op.comp, status);
  op.comp = nullptr;
  op.unpack = nullptr;
  if (op.buf) iface_->tx_pool().put(op.buf);
  op.buf = nullptr;
}

void RcQp::release(size_t count) {
  sq_avail_ += count;
  iface_->cq_credit(cq_index_) += count;
}

Status RcQp::on_send_completion(const ibv_wc& wc) {
  // A CQE for WR n means every WR before it on this QP succeeded; an error
  // CQE fails only its own WR, and the flushed ones each bring their own.
  size_t count = 0;
  Status result = Status::Ok;
  while (!outstanding_.empty() && outstanding_.front().sn <= wc.wr_id) {
    TxOp& op = outstanding_.front();
    Status s = Status::Ok;
    if (op.sn == wc.wr_id && wc.status != IBV_WC_SUCCESS) {
      s = wc_status_to_status(wc.status);
      if (wc.status != IBV_WC_WR_FLUSH_ERR) {
        MC_LOG(error) << iface_->tl_name() << ": QP " << qpn() << " WR " << op.sn
                      << " failed: " << wc_status_string(wc.status) << " (" << int(wc.status)
                      << ")";
      }
      result = s;
    }
    complete(op, s);
    outstanding_.pop_front();
    ++count;
  }
  release(count);
  if (wc.status != IBV_WC_SUCCESS && result == Status::Ok) result = Status::IoError;
  return result;
}

void RcQp::fail_all(Status status) {
  for (TxOp& op : outstanding_) {
    if (op.comp) completion_update(op.comp, status);
    op.comp = nullptr;
    op.unpack = nullptr;
  }
}

Status RcQp::post_recvs(size_t count) {
  for (size_t i = 0; i < count; ++i) {
    void* buf = iface_->rx_pool().get();
    if (!buf) {
      MC_LOG(error) << iface_->tl_name() << ": receive buffers exhausted (MC_RC_MAX_BUFS)";
      return Status::NoResource;
    }
    posted_rx_.insert(buf);
    repost(buf);
  }
  return Status::Ok;
}

void RcQp::repost(void* buf) {
  ibv_sge sge{reinterpret_cast<uintptr_t>(buf), static_cast<uint32_t>(iface_->rx_pool().size()),
              iface_->rx_pool().lkey(buf)};
  ibv_recv_wr wr{};
  wr.wr_id = reinterpret_cast<uintptr_t>(buf);
  wr.sg_list = &sge;
  wr.num_sge = 1;
  const int rc = wq_->post_recv(wr);
  if (rc != 0) {
    MC_LOG(error) << iface_->tl_name() << ": posting a receive on QP " << qpn() << ": "
                  << std::strerror(rc);
    posted_rx_.erase(buf);
    iface_->rx_pool().put(buf);
    return;
  }
  posted_rx_.insert(buf);
}

}  // namespace mc::uct::ib::rc
