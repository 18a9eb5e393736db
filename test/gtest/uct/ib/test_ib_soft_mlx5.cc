// SPDX-License-Identifier: Apache-2.0
// White-box tests of the soft provider's mlx5 mode: WQEs written by hand
// into the send queue buffer and announced by the doorbell record are
// executed by the device thread, which writes CQEs in the mlx5 layout:
// data moved, a bad rkey gives an error CQE (remote access syndrome) and
// touches nothing, a malformed WQE or a failed device fail with their
// syndromes, and later WQEs are flushed. Receive WQEs written into the
// receive queue buffer take SENDs; a too-short or malformed one gives a
// local length error and nothing is written.
#include <endian.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "uct/ib/base/mlx5_layout.h"
#include "uct/ib/soft/soft_fabric.h"
#include "uct/ib/soft/soft_verbs.h"
#include "uct/ib/soft_verbs_fixture.h"

namespace mc::uct::ib::mlx5 {
namespace {

using soft::kRw;
using ucs::Result;
using ucs::Status;

class SoftMlx5 : public soft::SoftVerbsFixture {
 protected:
  struct Qp {
    ibv_qp* qp = nullptr;
    Mlx5QpInfo info;
    uint16_t pi = 0;
    uint16_t rq_pi = 0;
  };

  void SetUp() override {
    SoftVerbsFixture::SetUp();
    if (HasFatalFailure()) return;
    ASSERT_TRUE(v_->mlx5_supported && v_->mlx5_qp_info && v_->mlx5_cq_info);
    EXPECT_TRUE(v_->mlx5_supported(ctx_->device));
    ASSERT_EQ(v_->mlx5_cq_info(cq_, &cq_info_), 0);
    ASSERT_EQ(cq_info_.cqe_size, kCqeSize);
    ASSERT_GE(cq_info_.cqe_cnt, 64u);
  }
  void TearDown() override {
    if (!fabric_.empty()) (void)soft::set_device_failed(fabric_, 0, false);
    SoftVerbsFixture::TearDown();
  }

  /// Two connected QPs in mlx5 mode.
  void connect_dv_pair(Qp* a, Qp* b) {
    connect_pair(&a->qp, &b->qp);
    ASSERT_EQ(v_->mlx5_qp_info(a->qp, &a->info), 0);
    ASSERT_EQ(v_->mlx5_qp_info(b->qp, &b->info), 0);
  }

  /// Writes one signalled WQE of `ds` segments (the control segment is
  /// filled here; `segs` are the others) and rings the doorbell record.
  uint16_t post_wqe(Qp* q, uint8_t opcode, const std::vector<uint8_t>& segs) {
    const uint16_t index = q->pi;
    uint8_t* wqe = q->info.sq_buf + (index & (q->info.sq_wqe_cnt - 1)) * 64;
    std::memcpy(wqe + kSegSize, segs.data(), segs.size());
    write_ctrl(wqe, index, opcode, 0, q->qp->qp_num,
               static_cast<uint8_t>(1 + segs.size() / kSegSize), kCqUpdate);
    q->pi = static_cast<uint16_t>(q->pi + (kSegSize + segs.size() + 63) / 64);
    __atomic_store_n(&q->info.dbrec[1], htobe32(q->pi), __ATOMIC_RELEASE);
    // The doorbell register: the device of the soft provider watches the
    // record, a NIC this write.
    std::memcpy(q->info.bf_reg, wqe, 8);
    return index;
  }
  static std::vector<uint8_t> rdma_segs(uint64_t raddr, uint32_t rkey, const void* laddr,
                                        uint32_t len, uint32_t lkey) {
    std::vector<uint8_t> s(2 * kSegSize);
    write_raddr(s.data(), raddr, rkey);
    write_data(s.data() + kSegSize, len, lkey, reinterpret_cast<uintptr_t>(laddr));
    return s;
  }

  /// Writes one receive WQE of raw segments into the receive queue buffer
  /// (ended by the kInvalidLkey segment when the stride has room) and rings
  /// the receive doorbell record.
  uint16_t post_rwqe(Qp* q, const std::vector<uint8_t>& segs) {
    const uint16_t index = q->rq_pi;
    uint8_t* wqe = q->info.rq_buf + (index & (q->info.rq_wqe_cnt - 1)) * q->info.rq_stride;
    std::memset(wqe, 0, q->info.rq_stride);
    std::memcpy(wqe, segs.data(), std::min<size_t>(segs.size(), q->info.rq_stride));
    if (segs.size() < q->info.rq_stride) write_data(wqe + segs.size(), 0, kInvalidLkey, 0);
    q->rq_pi = static_cast<uint16_t>(q->rq_pi + 1);
    __atomic_store_n(&q->info.dbrec[0], htobe32(q->rq_pi), __ATOMIC_RELEASE);
    return index;
  }
  /// A SEND of `msg` (registered with `lkey`) from `a`.
  void send(Qp* a, const std::vector<uint8_t>& msg, uint32_t lkey) {
    std::vector<uint8_t> seg(kSegSize);
    write_data(seg.data(), static_cast<uint32_t>(msg.size()), lkey,
               reinterpret_cast<uintptr_t>(msg.data()));
    post_wqe(a, kOpSend, seg);
  }
  /// Connects a pair, posts one receive WQE of `byte_count` (flag bits
  /// included) at `rx` on the second QP and sends `msg` from the first:
  /// the receive CQE (both CQEs must come); `*qpn` the receiving QP.
  Cqe send_to_one_rwqe(std::vector<uint8_t> msg, std::vector<uint8_t>& rx, uint32_t byte_count,
                       uint32_t* qpn = nullptr) {
    Qp a, b;
    connect_dv_pair(&a, &b);
    ibv_mr* m = reg(msg, kRw);
    ibv_mr* r = reg(rx, kRw);
    std::vector<uint8_t> seg(kSegSize);
    write_data(seg.data(), byte_count, r->lkey, reinterpret_cast<uintptr_t>(rx.data()));
    post_rwqe(&b, seg);
    send(&a, msg, m->lkey);
    std::vector<Cqe> c = poll(2);
    EXPECT_EQ(c.size(), 2u);
    if (qpn) *qpn = b.qp->qp_num;
    return recv_of(c);
  }

  /// The receive CQE among `c`.
  static Cqe recv_of(const std::vector<Cqe>& c) {
    for (const Cqe& e : c) {
      if (e.opcode != kCqeReq && e.opcode != kCqeReqErr) return e;
    }
    return Cqe{};
  }

  /// The next `n` CQEs from the CQ buffer (fewer when the device is slower
  /// than 10 s), the consumer index written back.
  std::vector<Cqe> poll(size_t n) {
    std::vector<Cqe> out;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (out.size() < n && std::chrono::steady_clock::now() < deadline) {
      const uint8_t* cqe = cq_info_.buf + (ci_ & (cq_info_.cqe_cnt - 1)) * kCqeSize;
      const uint8_t op_own = __atomic_load_n(&cqe[63], __ATOMIC_ACQUIRE);
      if ((op_own >> 4) == kCqeInvalid || (op_own & 1) != ((ci_ / cq_info_.cqe_cnt) & 1)) {
        std::this_thread::yield();
        continue;
      }
      out.push_back(read_cqe(cqe));
      ++ci_;
      __atomic_store_n(&cq_info_.dbrec[0], htobe32(ci_ & 0xffffff), __ATOMIC_RELEASE);
    }
    return out;
  }

  Mlx5CqInfo cq_info_;
  uint32_t ci_ = 0;
};

TEST_F(SoftMlx5, WqesInTheSendQueueRunAndCompleteAsCqes) {
  Qp qa, qb;
  connect_dv_pair(&qa, &qb);
  Qp* a = &qa;
  EXPECT_EQ(a->info.sq_stride, 64u);
  EXPECT_GE(a->info.sq_wqe_cnt, 16u);
  std::vector<uint8_t> src(256, 0x11), dst(256, 0), back(256, 0);
  ibv_mr* s = reg(src, kRw);
  ibv_mr* d = reg(dst, kRw);
  ibv_mr* k = reg(back, IBV_ACCESS_LOCAL_WRITE);
  const uint64_t raddr = reinterpret_cast<uintptr_t>(dst.data());
  const uint16_t w = post_wqe(a, kOpRdmaWrite, rdma_segs(raddr, d->rkey, src.data(), 256, s->lkey));
  const uint16_t r = post_wqe(a, kOpRdmaRead, rdma_segs(raddr, d->rkey, back.data(), 256, k->lkey));
  // An inline write of 5 bytes over the start of dst.
  std::vector<uint8_t> inl(2 * kSegSize, 0);
  write_raddr(inl.data(), raddr, d->rkey);
  write_inline_header(inl.data() + kSegSize, 5);
  std::memcpy(inl.data() + kSegSize + 4, "hello", 5);
  const uint16_t i = post_wqe(a, kOpRdmaWrite, inl);
  std::vector<Cqe> c = poll(3);
  ASSERT_EQ(c.size(), 3u);
  for (const Cqe& e : c) {
    EXPECT_EQ(e.opcode, kCqeReq);
    EXPECT_EQ(e.qpn, a->qp->qp_num);
  }
  EXPECT_EQ(c[0].wqe_counter, w);
  EXPECT_EQ(c[1].wqe_counter, r);
  EXPECT_EQ(c[2].wqe_counter, i);
  EXPECT_EQ(back, src);
  EXPECT_EQ(std::memcmp(dst.data(), "hello", 5), 0);
  EXPECT_EQ(std::memcmp(dst.data() + 5, src.data() + 5, 251), 0);
}

TEST_F(SoftMlx5, SendLandsInAPostedReceiveWithAReceiveCqe) {
  Qp qa, qb;
  connect_dv_pair(&qa, &qb);
  Qp *a = &qa, *b = &qb;
  std::vector<uint8_t> msg(100, 0x77), rx(256, 0);
  ibv_mr* m = reg(msg, kRw);
  ibv_mr* r = reg(rx, kRw);
  ibv_sge sge{reinterpret_cast<uintptr_t>(rx.data()), 256, r->lkey};
  ibv_recv_wr rwr{};
  rwr.sg_list = &sge;
  rwr.num_sge = 1;
  ibv_recv_wr* bad = nullptr;
  ASSERT_EQ(v_->post_recv(b->qp, &rwr, &bad), 0);
  std::vector<uint8_t> seg(kSegSize);
  write_data(seg.data(), 100, m->lkey, reinterpret_cast<uintptr_t>(msg.data()));
  post_wqe(a, kOpSend, seg);
  std::vector<Cqe> c = poll(2);
  ASSERT_EQ(c.size(), 2u);
  // The send's and the receive's, in either order.
  const Cqe& send = c[0].opcode == kCqeReq ? c[0] : c[1];
  const Cqe& recv = c[0].opcode == kCqeReq ? c[1] : c[0];
  EXPECT_EQ(send.opcode, kCqeReq);
  EXPECT_EQ(recv.opcode, kCqeRespSend);
  EXPECT_EQ(recv.qpn, b->qp->qp_num);
  EXPECT_EQ(recv.byte_count, 100u);
  EXPECT_EQ(std::memcmp(rx.data(), msg.data(), 100), 0);
}

TEST_F(SoftMlx5, ReceiveWqesInTheReceiveQueueTakeSendsInOrder) {
  Qp qa, qb;
  connect_dv_pair(&qa, &qb);
  Qp *a = &qa, *b = &qb;
  ASSERT_NE(b->info.rq_buf, nullptr);
  EXPECT_GE(b->info.rq_stride, kSegSize);
  EXPECT_GE(b->info.rq_wqe_cnt, 2u);
  std::vector<uint8_t> m1(40, 0x41), m2(60, 0x42), rx(512, 0);
  ibv_mr* s1 = reg(m1, kRw);
  ibv_mr* s2 = reg(m2, kRw);
  ibv_mr* r = reg(rx, kRw);
  for (int i = 0; i < 2; ++i) {
    std::vector<uint8_t> seg(kSegSize);
    write_data(seg.data(), 256, r->lkey, reinterpret_cast<uintptr_t>(rx.data() + 256 * i));
    EXPECT_EQ(post_rwqe(b, seg), i);
  }
  send(a, m1, s1->lkey);
  send(a, m2, s2->lkey);
  std::vector<Cqe> c = poll(4);
  ASSERT_EQ(c.size(), 4u);
  std::vector<Cqe> rx_cqes;
  for (const Cqe& e : c) {
    if (e.opcode == kCqeRespSend) rx_cqes.push_back(e);
  }
  ASSERT_EQ(rx_cqes.size(), 2u);
  EXPECT_EQ(rx_cqes[0].wqe_counter, 0);
  EXPECT_EQ(rx_cqes[0].byte_count, 40u);
  EXPECT_EQ(rx_cqes[1].wqe_counter, 1);
  EXPECT_EQ(rx_cqes[1].byte_count, 60u);
  EXPECT_EQ(std::memcmp(rx.data(), m1.data(), 40), 0);
  EXPECT_EQ(std::memcmp(rx.data() + 256, m2.data(), 60), 0);
  EXPECT_EQ(rx[40], 0);
}

TEST_F(SoftMlx5, TooShortReceiveWqeGivesALocalLengthErrorAndWritesNothing) {
  std::vector<uint8_t> rx(256, 0x99);
  uint32_t qpn = 0;
  const Cqe e = send_to_one_rwqe(std::vector<uint8_t>(100, 0x55), rx, 16, &qpn);
  EXPECT_EQ(e.opcode, kCqeRespErr);
  EXPECT_EQ(e.syndrome, kSyndLocalLength);
  EXPECT_EQ(e.qpn, qpn);
  EXPECT_EQ(rx, std::vector<uint8_t>(256, 0x99));
}

TEST_F(SoftMlx5, MalformedReceiveWqeGivesALocalLengthErrorAndWritesNothing) {
  std::vector<uint8_t> rx(256, 0x99);
  // An inline segment, which a receive queue cannot hold.
  const Cqe e = send_to_one_rwqe(std::vector<uint8_t>(32, 0x66), rx, 0x80000000u | 256);
  EXPECT_EQ(e.opcode, kCqeRespErr);
  EXPECT_EQ(e.syndrome, kSyndLocalLength);
  EXPECT_EQ(rx, std::vector<uint8_t>(256, 0x99));
}

TEST_F(SoftMlx5, ReceiveWqeBeyondItsRegistrationIsRejected) {
  std::vector<uint8_t> rx(64, 0x99);
  // Claims 4 KiB of a 64-byte registration: no byte may land.
  const Cqe e = send_to_one_rwqe(std::vector<uint8_t>(64, 0x12), rx, 4096);
  EXPECT_EQ(e.opcode, kCqeRespErr);
  EXPECT_EQ(rx, std::vector<uint8_t>(64, 0x99));
}

TEST_F(SoftMlx5, BadRkeyGivesAnErrorCqeTouchesNothingAndFlushesTheRest) {
  Qp qa, qb;
  connect_dv_pair(&qa, &qb);
  Qp* a = &qa;
  std::vector<uint8_t> src(64, 0x22), dst(64, 0x33);
  ibv_mr* s = reg(src, kRw);
  ibv_mr* d = reg(dst, kRw);
  const uint64_t raddr = reinterpret_cast<uintptr_t>(dst.data());
  const uint16_t bad =
      post_wqe(a, kOpRdmaWrite, rdma_segs(raddr, d->rkey ^ 0x1000, src.data(), 64, s->lkey));
  const uint16_t next =
      post_wqe(a, kOpRdmaWrite, rdma_segs(raddr, d->rkey, src.data(), 64, s->lkey));
  std::vector<Cqe> c = poll(2);
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].opcode, kCqeReqErr);
  EXPECT_EQ(c[0].syndrome, kSyndRemoteAccess);
  EXPECT_EQ(syndrome_status(c[0].syndrome), IBV_WC_REM_ACCESS_ERR);
  EXPECT_EQ(c[0].wqe_counter, bad);
  EXPECT_EQ(c[1].opcode, kCqeReqErr);
  EXPECT_EQ(c[1].syndrome, kSyndWrFlush);
  EXPECT_EQ(c[1].wqe_counter, next);
  EXPECT_EQ(dst, std::vector<uint8_t>(64, 0x33));
}

TEST_F(SoftMlx5, MalformedWqeGivesALocalQpOperationError) {
  Qp qa, qb;
  connect_dv_pair(&qa, &qb);
  Qp* a = &qa;
  std::vector<uint8_t> src(64, 0x22), dst(64, 0x33);
  ibv_mr* s = reg(src, kRw);
  ibv_mr* d = reg(dst, kRw);
  // An opcode the device does not know.
  post_wqe(a, 0x7f,
           rdma_segs(reinterpret_cast<uintptr_t>(dst.data()), d->rkey, src.data(), 64, s->lkey));
  std::vector<Cqe> c = poll(1);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].opcode, kCqeReqErr);
  EXPECT_EQ(c[0].syndrome, kSyndLocalQpOp);
  EXPECT_EQ(dst, std::vector<uint8_t>(64, 0x33));
}

TEST_F(SoftMlx5, FailedDeviceGivesTransportRetryExceeded) {
  Qp qa, qb;
  connect_dv_pair(&qa, &qb);
  Qp* a = &qa;
  std::vector<uint8_t> src(8, 1), dst(8, 2);
  ibv_mr* s = reg(src, kRw);
  ibv_mr* d = reg(dst, kRw);
  ASSERT_EQ(soft::set_device_failed(fabric_, 0, true), Status::Ok);
  post_wqe(a, kOpRdmaWrite,
           rdma_segs(reinterpret_cast<uintptr_t>(dst.data()), d->rkey, src.data(), 8, s->lkey));
  std::vector<Cqe> c = poll(1);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].opcode, kCqeReqErr);
  EXPECT_EQ(c[0].syndrome, kSyndTransportRetryExceeded);
  EXPECT_EQ(dst, std::vector<uint8_t>(8, 2));
}

TEST(Mlx5Syndromes, MapToTheCompletionStatusesAndBack) {
  for (ibv_wc_status s : {IBV_WC_LOC_LEN_ERR, IBV_WC_LOC_QP_OP_ERR, IBV_WC_LOC_PROT_ERR,
                          IBV_WC_WR_FLUSH_ERR, IBV_WC_REM_INV_REQ_ERR, IBV_WC_REM_ACCESS_ERR,
                          IBV_WC_REM_OP_ERR, IBV_WC_RETRY_EXC_ERR, IBV_WC_RNR_RETRY_EXC_ERR}) {
    EXPECT_EQ(syndrome_status(status_syndrome(s)), s) << s;
  }
  EXPECT_EQ(syndrome_status(0x77), IBV_WC_GENERAL_ERR);
}

TEST(Mlx5Layout, CqeWrittenIsTheCqeRead) {
  uint8_t cqe[kCqeSize] = {};
  Cqe in{};
  in.qpn = 0x123456;
  in.wqe_counter = 0xbeef;
  in.byte_count = 4096;
  in.syndrome = kSyndRemoteAccess;
  in.vendor_syndrome = 0x88;
  write_cqe_fields(cqe, in);
  cqe[63] = cqe_op_own(kCqeReqErr, true);
  const Cqe out = read_cqe(cqe);
  EXPECT_EQ(out.opcode, kCqeReqErr);
  EXPECT_TRUE(out.owner);
  EXPECT_EQ(out.qpn, in.qpn);
  EXPECT_EQ(out.wqe_counter, in.wqe_counter);
  EXPECT_EQ(out.byte_count, in.byte_count);
  EXPECT_EQ(out.syndrome, in.syndrome);
  EXPECT_EQ(out.vendor_syndrome, in.vendor_syndrome);
  const Ctrl c = [] {
    uint8_t seg[kSegSize];
    write_ctrl(seg, 0x1234, kOpRdmaRead, 0, 0xabcdef, 3, kCqUpdate);
    return read_ctrl(seg);
  }();
  EXPECT_EQ(c.wqe_index, 0x1234);
  EXPECT_EQ(c.opcode, kOpRdmaRead);
  EXPECT_EQ(c.qpn, 0xabcdefu);
  EXPECT_EQ(c.ds, 3);
  EXPECT_EQ(c.fm_ce_se, kCqUpdate);
}

}  // namespace
}  // namespace mc::uct::ib::mlx5
