// SPDX-License-Identifier: Apache-2.0
// White-box tests of the soft verbs provider: the QP state machine, rkey,
// access and bounds checks with a NIC's completion codes, flush errors, and
// the fault switches. They drive the verbs table directly. And the ib memory
// domain's batch registration on it: parallel, an error per buffer, nothing
// left registered.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "ucs/config/table.h"
#include "uct/ib/base/ib_md.h"
#include "uct/ib/soft/soft_fabric.h"
#include "uct/ib/soft/soft_verbs.h"
#include "uct/ib/soft_verbs_fixture.h"

namespace mc::uct::ib::soft {
namespace {

using ucs::Result;
using ucs::Status;

class SoftVerbs : public SoftVerbsFixture {
 protected:
  int post(ibv_qp* q, ibv_wr_opcode op, void* addr, uint32_t len, uint32_t lkey, uint64_t raddr,
           uint32_t rkey, uint64_t id) {
    ibv_sge sge{reinterpret_cast<uintptr_t>(addr), len, lkey};
    ibv_send_wr wr{};
    wr.wr_id = id;
    wr.opcode = op;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = raddr;
    wr.wr.rdma.rkey = rkey;
    ibv_send_wr* bad = nullptr;
    return v_->post_send(q, &wr, &bad);
  }
  std::vector<ibv_wc> poll() {
    ibv_wc wc[16];
    const int n = v_->poll_cq(cq_, 16, wc);
    return n > 0 ? std::vector<ibv_wc>(wc, wc + n) : std::vector<ibv_wc>{};
  }
};

TEST_F(SoftVerbs, QpStateMachineIsEnforced) {
  ibv_qp* q = make_qp();
  ibv_qp* peer = make_qp();
  ASSERT_TRUE(q && peer);
  std::vector<uint8_t> buf(64);
  ibv_mr* mr = reg(buf, kRw);
  EXPECT_EQ(post(q, IBV_WR_RDMA_WRITE, buf.data(), 8, mr->lkey, 0, 0, 1), EINVAL);  // RESET
  EXPECT_EQ(to_rtr(q, peer->qp_num), EINVAL);                 // RESET -> RTR skips INIT
  EXPECT_EQ(to_init(q, IBV_QP_STATE | IBV_QP_PORT), EINVAL);  // attributes missing
  ASSERT_EQ(to_init(q), 0);
  EXPECT_EQ(post(q, IBV_WR_RDMA_WRITE, buf.data(), 8, mr->lkey, 0, 0, 1), EINVAL);  // INIT
  EXPECT_EQ(to_rts(q), EINVAL);                       // INIT -> RTS skips RTR
  EXPECT_EQ(to_rtr(q, peer->qp_num, false), EINVAL);  // RoCE needs a GRH
  ASSERT_EQ(to_rtr(q, peer->qp_num), 0);
  EXPECT_EQ(post(q, IBV_WR_RDMA_WRITE, buf.data(), 8, mr->lkey, 0, 0, 1), EINVAL);  // RTR
  EXPECT_EQ(to_rts(q), 0);
}

TEST_F(SoftVerbs, WriteAndReadMoveDataAfterTheChecks) {
  ibv_qp *a, *b;
  connect_pair(&a, &b);
  std::vector<uint8_t> src(256, 0x11), dst(256, 0), back(256, 0);
  ibv_mr* s = reg(src, kRw);
  ibv_mr* d = reg(dst, kRw);
  ibv_mr* k = reg(back, IBV_ACCESS_LOCAL_WRITE);
  ASSERT_EQ(post(a, IBV_WR_RDMA_WRITE, src.data(), 256, s->lkey,
                 reinterpret_cast<uintptr_t>(dst.data()), d->rkey, 1),
            0);
  ASSERT_EQ(post(a, IBV_WR_RDMA_READ, back.data(), 256, k->lkey,
                 reinterpret_cast<uintptr_t>(dst.data()), d->rkey, 2),
            0);
  std::vector<ibv_wc> wc = poll();
  ASSERT_EQ(wc.size(), 2u);
  EXPECT_EQ(wc[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(wc[0].opcode, IBV_WC_RDMA_WRITE);
  EXPECT_EQ(wc[1].status, IBV_WC_SUCCESS);
  EXPECT_EQ(wc[1].opcode, IBV_WC_RDMA_READ);
  EXPECT_EQ(dst, src);
  EXPECT_EQ(back, src);
}

TEST_F(SoftVerbs, BadRkeyGivesRemoteAccessErrorTouchesNothingAndFlushesTheRest) {
  ibv_qp *a, *b;
  connect_pair(&a, &b);
  std::vector<uint8_t> src(64, 0x22), dst(64, 0x33);
  ibv_mr* s = reg(src, kRw);
  ibv_mr* d = reg(dst, kRw);
  const uint64_t raddr = reinterpret_cast<uintptr_t>(dst.data());
  ASSERT_EQ(post(a, IBV_WR_RDMA_WRITE, src.data(), 64, s->lkey, raddr, d->rkey ^ 0x1000, 1), 0);
  ASSERT_EQ(post(a, IBV_WR_RDMA_WRITE, src.data(), 64, s->lkey, raddr, d->rkey, 2), 0);
  std::vector<ibv_wc> wc = poll();
  ASSERT_EQ(wc.size(), 2u);
  EXPECT_EQ(wc[0].status, IBV_WC_REM_ACCESS_ERR);
  EXPECT_EQ(wc[1].status, IBV_WC_WR_FLUSH_ERR);  // the QP is in the error state now
  EXPECT_EQ(dst, std::vector<uint8_t>(64, 0x33));
}

TEST_F(SoftVerbs, AccessOutsideTheRegionOrWithoutRightsIsRefused) {
  ibv_qp *a, *b;
  connect_pair(&a, &b);
  std::vector<uint8_t> src(128, 0x44), dst(128, 0x55), ro(64, 0x66);
  ibv_mr* s = reg(src, kRw);
  ibv_mr* d = v_->reg_mr(pd_, dst.data(), 64, kRw);  // only the first half
  mrs_.push_back(d);
  ASSERT_EQ(post(a, IBV_WR_RDMA_WRITE, src.data(), 128, s->lkey,
                 reinterpret_cast<uintptr_t>(dst.data()), d->rkey, 1),
            0);
  std::vector<ibv_wc> wc = poll();
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].status, IBV_WC_REM_ACCESS_ERR);
  EXPECT_EQ(dst, std::vector<uint8_t>(128, 0x55));

  ibv_qp *c, *e;
  connect_pair(&c, &e);
  ibv_mr* r = reg(ro, IBV_ACCESS_REMOTE_READ);
  ASSERT_EQ(post(c, IBV_WR_RDMA_WRITE, src.data(), 8, s->lkey,
                 reinterpret_cast<uintptr_t>(ro.data()), r->rkey, 2),
            0);
  wc = poll();
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].status, IBV_WC_REM_ACCESS_ERR);
  EXPECT_EQ(ro, std::vector<uint8_t>(64, 0x66));
  // Remote write without local write is refused at registration, as verbs do.
  errno = 0;
  EXPECT_EQ(v_->reg_mr(pd_, ro.data(), ro.size(), IBV_ACCESS_REMOTE_WRITE), nullptr);
  EXPECT_EQ(errno, EINVAL);
}

TEST_F(SoftVerbs, SendToASmallReceiveGivesLocalLengthError) {
  ibv_qp *a, *b;
  connect_pair(&a, &b);
  std::vector<uint8_t> msg(100, 0x77), small(16, 0);
  ibv_mr* m = reg(msg, kRw);
  ibv_mr* r = reg(small, kRw);
  ibv_sge sge{reinterpret_cast<uintptr_t>(small.data()), 16, r->lkey};
  ibv_recv_wr rwr{};
  rwr.wr_id = 9;
  rwr.sg_list = &sge;
  rwr.num_sge = 1;
  ibv_recv_wr* bad = nullptr;
  ASSERT_EQ(v_->post_recv(b, &rwr, &bad), 0);
  ASSERT_EQ(post(a, IBV_WR_SEND, msg.data(), 100, m->lkey, 0, 0, 1), 0);
  std::vector<ibv_wc> wc = poll();
  ASSERT_EQ(wc.size(), 2u);
  EXPECT_EQ(wc[0].status, IBV_WC_SUCCESS);  // the send
  EXPECT_EQ(wc[1].wr_id, 9u);
  EXPECT_EQ(wc[1].status, IBV_WC_LOC_LEN_ERR);
  EXPECT_EQ(small, std::vector<uint8_t>(16, 0));
}

TEST_F(SoftVerbs, FailedDeviceReportsPortDownAndRetryExceeded) {
  ibv_qp *a, *b;
  connect_pair(&a, &b);
  std::vector<uint8_t> src(8, 1), dst(8, 2);
  ibv_mr* s = reg(src, kRw);
  ibv_mr* d = reg(dst, kRw);
  ASSERT_EQ(set_device_failed(fabric_, 0, true), Status::Ok);
  ibv_port_attr pa{};
  ASSERT_EQ(v_->query_port(ctx_, 1, &pa), 0);
  EXPECT_EQ(pa.state, IBV_PORT_DOWN);
  ASSERT_EQ(post(a, IBV_WR_RDMA_WRITE, src.data(), 8, s->lkey,
                 reinterpret_cast<uintptr_t>(dst.data()), d->rkey, 1),
            0);
  ASSERT_EQ(set_device_failed(fabric_, 0, false), Status::Ok);
  std::vector<ibv_wc> wc = poll();
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].status, IBV_WC_RETRY_EXC_ERR);
  EXPECT_EQ(dst, std::vector<uint8_t>(8, 2));
  ASSERT_EQ(v_->query_port(ctx_, 1, &pa), 0);
  EXPECT_EQ(pa.state, IBV_PORT_ACTIVE);
}

TEST_F(SoftVerbs, FailedQpFailsItsWork) {
  ibv_qp *a, *b;
  connect_pair(&a, &b);
  std::vector<uint8_t> src(8, 1), dst(8, 2);
  ibv_mr* s = reg(src, kRw);
  ibv_mr* d = reg(dst, kRw);
  ASSERT_EQ(fail_qp(fabric_, b->qp_num), Status::Ok);
  EXPECT_EQ(fail_qp(fabric_, 0), Status::NoElem);
  ASSERT_EQ(post(a, IBV_WR_RDMA_WRITE, src.data(), 8, s->lkey,
                 reinterpret_cast<uintptr_t>(dst.data()), d->rkey, 1),
            0);
  std::vector<ibv_wc> wc = poll();
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].status, IBV_WC_RETRY_EXC_ERR);
  EXPECT_EQ(dst, std::vector<uint8_t>(8, 2));
}

// The ib md over the soft provider's two devices, as rc_verbs opens it.
class BatchMd : public IbMd {
 public:
  using IbMd::IbMd;
  const char* tl_name() const override { return "rc_verbs"; }
  Result<std::unique_ptr<Iface>> iface_open(const IfaceParams&) override {
    return Status::Unsupported;
  }
};

class IbMdBatch : public SoftVerbsFixture {
 protected:
  std::unique_ptr<BatchMd> open_md(const char* threads) {
    Result<ucs::config::Sources> src = ucs::config::Sources::from({{"MC_IB_PROVIDER", "soft"},
                                                                   {"MC_IB_SOFT_FABRIC", fabric_},
                                                                   {"MC_IB_SOFT_DEVICES", "2"},
                                                                   {"MC_IB_REG_THREADS", threads}},
                                                                  {});
    EXPECT_TRUE(src.ok());
    Result<IbConfig> cfg = ucs::config::read_table<IbConfig>(ib_config_table(), *src);
    EXPECT_TRUE(cfg.ok());
    if (!src.ok() || !cfg.ok()) return nullptr;
    return std::make_unique<BatchMd>("rc_verbs", v_, *cfg, "");
  }
  /// MRs of this process on the fabric.
  size_t live_mrs() {
    Result<Fabric*> f = Fabric::open(fabric_);
    if (!f.ok()) return ~size_t{0};
    Fabric::Guard g(*f);
    size_t n = 0;
    for (const MrSlot& m : (*f)->layout()->mr) n += m.key != 0 && m.pid == getpid();
    return n;
  }
};

TEST_F(IbMdBatch, RegistersManyBuffersInParallelAndFailsOnlyTheInvalidOne) {
  std::unique_ptr<BatchMd> md = open_md("4");
  ASSERT_TRUE(md);
  ASSERT_EQ(md->devices().size(), 2u);
  const size_t before = live_mrs();
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  // A page no mapping ever takes (the first past the 47-bit user space
  // mmap places memory in): what a NIC cannot pin. (A page unmapped here
  // could be mapped again by the allocations below or another thread.)
  void* hole = reinterpret_cast<void*>(uintptr_t{1} << 47);
  constexpr size_t kBuffers = 64, kBad = 37;
  std::vector<std::vector<uint8_t>> bufs(kBuffers, std::vector<uint8_t>(3 * page + 5));
  std::vector<MemRegRequest> reqs;
  for (size_t i = 0; i < kBuffers; ++i) {
    reqs.push_back({bufs[i].data(), bufs[i].size(), kAccessRemoteRead | kAccessRemoteWrite});
  }
  reqs[kBad] = {hole, page, kAccessRemoteWrite};
  reqs.push_back({nullptr, 8, kAccessRemoteRead});  // invalid before any call
  std::vector<Result<std::unique_ptr<MemHandle>>> got = md->mem_reg_batch(reqs);
  ASSERT_EQ(got.size(), reqs.size());
  for (size_t i = 0; i < kBuffers; ++i) {
    if (i == kBad) {
      EXPECT_EQ(got[i].status(), Status::IoError);
      continue;
    }
    ASSERT_TRUE(got[i].ok()) << i;
    const MemHandle& h = **got[i];
    EXPECT_EQ(h.address(), bufs[i].data());
    EXPECT_EQ(h.length(), bufs[i].size());
    std::vector<uint8_t> packed;
    EXPECT_EQ(md->mkey_pack(h, &packed), Status::Ok);
  }
  EXPECT_EQ(got.back().status(), Status::InvalidParam);
  // One MR per device per good buffer; the failed one left none.
  EXPECT_EQ(live_mrs(), before + 2 * (kBuffers - 1));
  got.clear();
  EXPECT_EQ(live_mrs(), before);
}

TEST_F(IbMdBatch, OneThreadAndAnEmptyBatchWork) {
  std::unique_ptr<BatchMd> md = open_md("1");
  ASSERT_TRUE(md);
  const size_t before = live_mrs();
  EXPECT_TRUE(md->mem_reg_batch({}).empty());
  std::vector<uint8_t> a(100), b(200);
  const MemRegRequest reqs[] = {{a.data(), a.size(), kAccessRemoteRead},
                                {b.data(), b.size(), kAccessRemoteRead}};
  {
    std::vector<Result<std::unique_ptr<MemHandle>>> got = md->mem_reg_batch(reqs);
    ASSERT_EQ(got.size(), 2u);
    EXPECT_TRUE(got[0].ok());
    EXPECT_TRUE(got[1].ok());
    EXPECT_EQ(live_mrs(), before + 4);
  }
  EXPECT_EQ(live_mrs(), before);
}

}  // namespace
}  // namespace mc::uct::ib::soft
