// SPDX-License-Identifier: Apache-2.0
// rc_mlx5 iface: the RC iface whose queue pairs post WQEs directly
// (Mlx5Wq) and whose completion queues are polled from their CQE buffers,
// without the verbs call path. Everything else (connection, endpoints,
// credits, errors) is the RC transport's.
#pragma once

#include <memory>
#include <unordered_map>

#include "uct/ib/rc/rc_iface.h"

namespace mc::uct::ib::mlx5 {

class Mlx5Iface : public rc::RcIface {
 public:
  static Result<std::unique_ptr<rc::RcIface>> create(IbMd* md, size_t dev_index,
                                                     const rc::RcConfig& config,
                                                     const IfaceParams& params);
  IfaceAttr query() const override;
  Result<std::unique_ptr<rc::RcWq>> wq_open(ibv_qp* qp) override;

  /// Basic blocks of the largest WQE the configuration allows.
  static uint32_t max_wqe_bbs(const rc::RcConfig& config);

 protected:
  int poll_cq(ibv_cq* cq, int n, ibv_wc* wc) override;
  /// Arms through the CQ's arm doorbell record and UAR doorbell, with the
  /// consumer index this poller keeps (the provider's verb does not know it).
  int cq_arm(ibv_cq* cq) override;
  void cq_event(ibv_cq* cq) override;

 private:
  struct Cq {
    Mlx5CqInfo info;
    uint32_t ci = 0;      // consumer index
    uint32_t arm_sn = 0;  // events taken: the device ignores a stale arm
  };
  using rc::RcIface::RcIface;
  Status cq_open(ibv_cq* cq);
  /// Turns the CQE at `cqe` into `wc`; false when it is not one to report.
  bool decode(const uint8_t* cqe, ibv_wc* wc);

  std::unordered_map<ibv_cq*, Cq> cqs_;
};

}  // namespace mc::uct::ib::mlx5
