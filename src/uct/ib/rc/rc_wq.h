// SPDX-License-Identifier: Apache-2.0
// How a queue pair's work requests reach the device: through the verbs
// calls (rc_verbs), or written straight into the queue's buffer (rc_mlx5).
#pragma once

#include <infiniband/verbs.h>

#include "uct/ib/base/ib_verbs.h"

namespace mc::uct::ib::rc {

class RcWq {
 public:
  virtual ~RcWq() = default;
  /// Posts one send work request (wr.next is null). 0 or an errno.
  virtual int post_send(ibv_send_wr& wr) = 0;
  /// Posts one receive work request. 0 or an errno.
  virtual int post_recv(ibv_recv_wr& wr) = 0;
};

/// Through the provider's ibv_post_send / ibv_post_recv.
class VerbsWq : public RcWq {
 public:
  VerbsWq(const VerbsOps& ops, ibv_qp* qp) : ops_(ops), qp_(qp) {}
  int post_send(ibv_send_wr& wr) override {
    ibv_send_wr* bad = nullptr;
    return ops_.post_send(qp_, &wr, &bad);
  }
  int post_recv(ibv_recv_wr& wr) override {
    ibv_recv_wr* bad = nullptr;
    return ops_.post_recv(qp_, &wr, &bad);
  }

 private:
  const VerbsOps& ops_;
  ibv_qp* qp_;
};

}  // namespace mc::uct::ib::rc
