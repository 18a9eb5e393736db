// SPDX-License-Identifier: Apache-2.0
// The fixture of the soft provider's white-box tests: the verbs table on
// this run's fabric, a device context, a PD and a CQ, and queue pairs
// created, connected to each other and cleaned up.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "uct/ib/soft/soft_verbs.h"
#include "uct/uct_test.h"

namespace mc::uct::ib::soft {

inline constexpr int kRw =
    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;

class SoftVerbsFixture : public testing::Test {
 protected:
  void SetUp() override {
    test::use_soft_verbs_unless_told();
    fabric_ = std::getenv("MC_IB_SOFT_FABRIC");
    std::string why;
    ucs::Result<const VerbsOps*> ops = verbs_ops_soft(fabric_, 2, &why);
    ASSERT_TRUE(ops.ok()) << why;
    v_ = *ops;
    int n = 0;
    ibv_device** list = v_->get_device_list(&n);
    ASSERT_EQ(n, 2);
    ctx_ = v_->open_device(list[0]);
    v_->free_device_list(list);
    pd_ = v_->alloc_pd(ctx_);
    cq_ = v_->create_cq(ctx_, 64, nullptr, nullptr, 0);
    ASSERT_TRUE(ctx_ && pd_ && cq_);
  }
  void TearDown() override {
    for (ibv_qp* q : qps_) v_->destroy_qp(q);
    for (ibv_mr* m : mrs_) v_->dereg_mr(m);
    if (cq_) v_->destroy_cq(cq_);
    if (pd_) v_->dealloc_pd(pd_);
    if (ctx_) v_->close_device(ctx_);
  }

  ibv_qp* make_qp() {
    ibv_qp_init_attr a{};
    a.send_cq = a.recv_cq = cq_;
    a.qp_type = IBV_QPT_RC;
    a.cap = {16, 16, 4, 4, 64};
    ibv_qp* q = v_->create_qp(pd_, &a);
    if (q) qps_.push_back(q);
    return q;
  }
  int to_init(ibv_qp* q,
              int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) {
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_INIT;
    a.port_num = 1;
    return v_->modify_qp(q, &a, mask);
  }
  int to_rtr(ibv_qp* q, uint32_t dest, bool grh = true) {
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_RTR;
    a.dest_qp_num = dest;
    a.path_mtu = IBV_MTU_4096;
    a.ah_attr.is_global = grh;
    a.ah_attr.port_num = 1;
    return v_->modify_qp(q, &a,
                         IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                             IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
  }
  int to_rts(ibv_qp* q) {
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_RTS;
    return v_->modify_qp(q, &a,
                         IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                             IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
  }
  /// Two QPs connected to each other (a loopback connection on device 0).
  void connect_pair(ibv_qp** a, ibv_qp** b) {
    *a = make_qp();
    *b = make_qp();
    ASSERT_TRUE(*a && *b);
    ASSERT_EQ(to_init(*a), 0);
    ASSERT_EQ(to_init(*b), 0);
    ASSERT_EQ(to_rtr(*a, (*b)->qp_num), 0);
    ASSERT_EQ(to_rtr(*b, (*a)->qp_num), 0);
    ASSERT_EQ(to_rts(*a), 0);
    ASSERT_EQ(to_rts(*b), 0);
  }
  ibv_mr* reg(std::vector<uint8_t>& buf, int access) {
    ibv_mr* m = v_->reg_mr(pd_, buf.data(), buf.size(), access);
    if (m) mrs_.push_back(m);
    return m;
  }
  std::string fabric_;
  const VerbsOps* v_ = nullptr;
  ibv_context* ctx_ = nullptr;
  ibv_pd* pd_ = nullptr;
  ibv_cq* cq_ = nullptr;
  std::vector<ibv_qp*> qps_;
  std::vector<ibv_mr*> mrs_;
};

}  // namespace mc::uct::ib::soft
