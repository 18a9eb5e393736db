// SPDX-License-Identifier: Apache-2.0
// RC endpoint (rc_verbs, rc_mlx5): NUM_QP_PER_EP queue pairs to one peer iface, connected
// through the peer's out-of-band listener. Puts and gets are RDMA WRITE and
// READ; active messages are SENDs into the peer's receive buffers.
#pragma once

#include <memory>
#include <vector>

#include "uct/api/ep.h"
#include "uct/ib/base/ib_md.h"
#include "uct/ib/rc/rc_qp.h"
#include "uct/ib/rc/rc_wire.h"

namespace mc::uct::ib::rc {

class RcIface;

class RcEp : public Endpoint {
 public:
  /// Creates the queue pairs and sends the connection request; the
  /// endpoint is usable once the reply arrives (operations return
  /// NoResource until then).
  static Result<std::unique_ptr<RcEp>> create(RcIface* iface, const DeviceAddr& peer,
                                              const IfaceAddr& addr);
  ~RcEp() override;

  Status put_short(const void* buffer, size_t length, uint64_t remote_addr,
                   const Rkey& rkey) override;
  Result<size_t> put_bcopy(PackCallback pack, void* arg, uint64_t remote_addr,
                           const Rkey& rkey) override;
  Status put_zcopy(const Iov* iov, size_t iov_count, uint64_t remote_addr, const Rkey& rkey,
                   Completion* comp) override;
  Status get_bcopy(UnpackCallback unpack, void* arg, size_t length, uint64_t remote_addr,
                   const Rkey& rkey, Completion* comp) override;
  Status get_zcopy(const Iov* iov, size_t iov_count, uint64_t remote_addr, const Rkey& rkey,
                   Completion* comp) override;
  Status am_short(uint8_t id, uint64_t header, const void* payload, size_t length) override;
  Result<size_t> am_bcopy(uint8_t id, PackCallback pack, void* arg) override;
  Status am_zcopy(uint8_t id, const void* header, size_t header_length, const Iov* iov,
                  size_t iov_count, Completion* comp) override;
  Status flush(Completion* comp) override;
  Status fence() override;
  Status pending_add(PendingReq* req) override;
  void pending_purge(const std::function<void(PendingReq*)>& cb) override;
  Status check() override;
  Status connect_status() override;

  // For the iface.
  /// The connection socket is readable: the reply, or the peer closing.
  void on_oob_event();
  /// Fails the endpoint: every outstanding operation completes with
  /// `status` now, the error handler is called from progress().
  void fail(Status status);
  bool failed() const { return status_ != Status::Ok; }
  bool idle() const;
  /// Completes flush requests whose operations are done.
  void check_flushes();

 private:
  struct FlushReq {
    Completion* comp;
    std::vector<uint64_t> upto;  // per QP
  };
  explicit RcEp(RcIface* iface) : iface_(iface) {}
  /// Ok when an op may be posted on `qp` now, NoResource when not yet, or
  /// the endpoint's error.
  Status ready(const RcQp& qp) const;
  RcQp& rma_qp() { return *qps_[rr_++ % qps_.size()]; }
  Result<uint32_t> remote_key(const Rkey& rkey) const;
  /// Fills `sge` from the non-empty entries of `iov` and returns how many;
  /// InvalidParam for an entry outside a registration of this md.
  Result<int> iov_sges(const Iov* iov, size_t count, ibv_sge* sge) const;
  Status post_rdma(RcQp& qp, ibv_wr_opcode op, ibv_sge* sge, int nsge, uint64_t raddr,
                   uint32_t rkey, unsigned flags, TxOp txop);
  Status post_send(ibv_sge* sge, int nsge, unsigned flags, TxOp txop);

  RcIface* iface_;
  std::vector<std::unique_ptr<RcQp>> qps_;
  DeviceAddr peer_;
  int fd_ = -1;
  bool connected_ = false;
  bool fenced_ = false;
  Status status_ = Status::Ok;
  size_t rr_ = 0;
  FrameReader reader_;
  std::vector<FlushReq> flushes_;
};

}  // namespace mc::uct::ib::rc
