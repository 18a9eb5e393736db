// SPDX-License-Identifier: Apache-2.0
// One RC queue pair of an endpoint (or of a connection accepted from a
// peer): its transitions, send credits, signalled-completion batching and
// the operations outstanding on it, completed in order by each CQE.
#pragma once

#include <deque>
#include <memory>
#include <unordered_set>

#include "uct/api/types.h"
#include "uct/ib/rc/rc_wire.h"
#include "uct/ib/rc/rc_wq.h"

namespace mc::uct::ib::rc {

class RcIface;
class RcEp;

/// An operation posted and not yet known complete.
struct TxOp {
  uint64_t sn = 0;                  ///< the WR's wr_id
  Completion* comp = nullptr;       ///< user completion, null for none
  void* buf = nullptr;              ///< bounce buffer to give back
  UnpackCallback unpack = nullptr;  ///< get_bcopy: where the data goes
  void* arg = nullptr;
  size_t length = 0;
};

class RcQp {
 public:
  /// A QP in INIT on `iface`'s device, its sends completing on send CQ
  /// `cq_index`. `owner` is null for the QPs of an accepted connection,
  /// which receive active messages.
  static Result<std::unique_ptr<RcQp>> create(RcIface* iface, size_t cq_index, RcEp* owner);
  ~RcQp();
  RcQp(const RcQp&) = delete;
  RcQp& operator=(const RcQp&) = delete;

  QpInfo local_info() const { return {qp_->qp_num, psn_}; }
  ibv_qp* qp() const { return qp_; }
  RcWq& wq() { return *wq_; }
  uint32_t qpn() const { return qp_->qp_num; }
  RcEp* owner() const { return owner_; }

  /// INIT -> RTR -> RTS towards `remote` on the device `peer` with path MTU
  /// at most `mtu` bytes. IoError (logged with the errno) when a step fails.
  Status connect(const QpInfo& remote, const DeviceAddr& peer, uint16_t mtu);

  /// A send queue entry and a completion queue entry are free.
  bool has_credit() const;
  /// Posts `wr` for `op` (wr_id, signalling set here). NoResource without
  /// credit; IoError when the provider refuses it.
  Status post(ibv_send_wr& wr, TxOp op);
  /// Posts a signalled zero-length RDMA WRITE when the last WR was not
  /// signalled, so everything outstanding completes. Ok or NoResource.
  Status post_signal();
  /// Whether every op up to `sn` completed.
  bool done_upto(uint64_t sn) const { return outstanding_.empty() || outstanding_.front().sn > sn; }
  uint64_t last_sn() const { return next_sn_ - 1; }
  bool empty() const { return outstanding_.empty(); }

  /// A send CQE of this QP: completes the ops it covers. Returns an error
  /// status when the CQE carries one.
  Status on_send_completion(const ibv_wc& wc);
  /// Tells every op's owner `status` now; their buffers and credits come
  /// back as the flush CQEs arrive (or when the QP is destroyed).
  void fail_all(Status status);

  /// Receive side: posts `count` buffers from the iface's receive pool.
  Status post_recvs(size_t count);
  /// Reposts a receive buffer that came back; returns it to the pool on failure.
  void repost(void* buf);
  /// A receive buffer came back (completion or flush).
  void recv_returned(void* buf) { posted_rx_.erase(buf); }

 private:
  RcQp(RcIface* iface, size_t cq_index, RcEp* owner)
      : iface_(iface), cq_index_(cq_index), owner_(owner) {}
  void complete(TxOp& op, Status status);
  void release(size_t count);

  RcIface* iface_;
  size_t cq_index_;
  RcEp* owner_;
  ibv_qp* qp_ = nullptr;
  std::unique_ptr<RcWq> wq_;
  uint32_t psn_ = 0;
  uint64_t next_sn_ = 1;
  size_t sq_avail_ = 0;
  size_t unsignalled_ = 0;
  bool last_signalled_ = true;
  std::deque<TxOp> outstanding_;
  std::unordered_set<void*> posted_rx_;
};

/// The status an endpoint fails with for a CQE's error status.
Status wc_status_to_status(ibv_wc_status status);

}  // namespace mc::uct::ib::rc
