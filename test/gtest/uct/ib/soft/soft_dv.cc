// SPDX-License-Identifier: Apache-2.0
// The soft provider's mlx5 mode: mlx5dv-shaped queues (send queue buffer,
// doorbell record, CQ buffer, a fake BlueFlame page) and a device thread
// that fetches the WQEs posted there when the doorbell record moves,
// executes them with the provider's RDMA WRITE/READ/SEND (same checks, same
// completion codes) and writes CQEs in the mlx5 layout.
#include <endian.h>
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <new>
#include <thread>

#include "uct/ib/base/mlx5_layout.h"
#include "uct/ib/soft/soft_objects.h"

namespace mc::uct::ib::soft {

namespace {

constexpr uint32_t kBb = 64;         // WQE basic block
constexpr uint32_t kBfSize = 256;    // BlueFlame buffer (two per page)
constexpr uint32_t kMaxWqeBbs = 16;  // 1 KiB, mlx5's largest send WQE

uint32_t pow2_at_least(uint64_t n) {
  uint32_t v = 1;
  while (v < n) v <<= 1;
  return v;
}

// The device thread: one per process, started by the first queue put in
// mlx5 mode. After fork() the child has none until it makes its own.
struct Engine {
  std::thread* thread = nullptr;  // leaked in a forked child: it is not there
  std::atomic<bool> stop{false};
  pid_t pid = 0;
  ~Engine() {
    stop = true;
    if (thread && pid == getpid()) {
      thread->join();
      delete thread;
    }
  }
};

Engine& engine() {
  static Engine e;
  return e;
}

uint8_t* sq_bytes(SoftQp* q) {
  return reinterpret_cast<uint8_t*>(q->dv_sq.data());
}

// Copies `n` bytes of the send queue from basic block `bb` on, wrapping at
// its end as the WQE does.
void sq_read(SoftQp* q, uint32_t bb, uint8_t* out, uint32_t n) {
  const uint32_t size = q->dv_wqe_cnt * kBb;
  uint32_t off = (bb & (q->dv_wqe_cnt - 1)) * kBb;
  for (uint32_t i = 0; i < n; ++i) out[i] = sq_bytes(q)[(off + i) % size];
}

ibv_wr_opcode wr_opcode(uint8_t op, bool* ok) {
  *ok = true;
  switch (op) {
    case mlx5::kOpRdmaWrite: return IBV_WR_RDMA_WRITE;
    case mlx5::kOpRdmaRead: return IBV_WR_RDMA_READ;
    case mlx5::kOpSend: return IBV_WR_SEND;
    default: *ok = false; return IBV_WR_SEND;
  }
}

// Decodes one WQE of `bytes` (ds x 16 bytes) into `wr`. False for a WQE a
// NIC would reject (unknown opcode, segments past the WQE, too many SGEs).
bool decode_wqe(const uint8_t* wqe, uint32_t bytes, const mlx5::Ctrl& c, SendWr* wr) {
  bool ok = false;
  wr->opcode = wr_opcode(c.opcode, &ok);
  if (!ok) return false;
  wr->wr_id = c.wqe_index;
  wr->flags = (c.fm_ce_se & mlx5::kCqUpdate) ? IBV_SEND_SIGNALED : 0;
  uint32_t off = mlx5::kSegSize;
  if (wr->opcode != IBV_WR_SEND) {
    if (off + mlx5::kSegSize > bytes) return false;
    wr->remote_addr = mlx5::get_be64(wqe + off);
    wr->rkey = mlx5::get_be32(wqe + off + 8);
    off += mlx5::kSegSize;
  }
  while (off < bytes) {
    if (off + 4 > bytes) return false;
    const uint32_t w = mlx5::get_be32(wqe + off);
    if (w & 0x80000000u) {
      const uint32_t len = w & 0x7fffffffu;
      if (len > bytes - off - 4 || !wr->sge.empty() || wr->opcode == IBV_WR_RDMA_READ) {
        return false;
      }
      wr->inline_data.insert(wr->inline_data.end(), wqe + off + 4, wqe + off + 4 + len);
      off += (4 + len + mlx5::kSegSize - 1) & ~(mlx5::kSegSize - 1);
      continue;
    }
    if (off + mlx5::kSegSize > bytes || !wr->inline_data.empty() || wr->sge.size() >= kMaxSge) {
      return false;
    }
    // A byte count of 0 means 2 GiB to the NIC.
    const uint32_t len = w == 0 ? 0x80000000u : w;
    wr->sge.push_back(ibv_sge{mlx5::get_be64(wqe + off + 8), len, mlx5::get_be32(wqe + off + 4)});
    off += mlx5::kSegSize;
  }
  return true;
}

// Fetches the WQEs announced by the doorbell record into the QP's queue.
// A malformed WQE fails the QP with a local QP operation error, as a NIC does.
bool fetch(Fabric* f, SoftQp* q) {
  const uint16_t pi =
      static_cast<uint16_t>(be32toh(__atomic_load_n(&q->dv_dbrec[1], __ATOMIC_ACQUIRE)) & 0xffff);
  bool any = false;
  while (q->dv_ci != pi) {
    any = true;
    const uint16_t avail = static_cast<uint16_t>(pi - q->dv_ci);
    uint8_t wqe[kMaxWqeBbs * kBb];
    sq_read(q, q->dv_ci, wqe, mlx5::kSegSize);
    const mlx5::Ctrl c = mlx5::read_ctrl(wqe);
    const uint32_t bytes = uint32_t{c.ds} * mlx5::kSegSize;
    const uint32_t bbs = (bytes + kBb - 1) / kBb;
    SendWr wr{};
    bool ok = c.ds >= 1 && bbs <= q->dv_max_bbs && bbs <= avail && c.wqe_index == q->dv_ci &&
              c.qpn == q->qp.qp_num;
    if (ok) {
      sq_read(q, q->dv_ci, wqe, bytes);
      ok = decode_wqe(wqe, bytes, c, &wr);
    }
    if (!ok) {
      ibv_wc wc{};
      wc.wr_id = q->dv_ci;
      wc.status = IBV_WC_LOC_QP_OP_ERR;
      wc.qp_num = q->qp.qp_num;
      push_wc(reinterpret_cast<SoftCq*>(q->qp.send_cq), wc);
      if (QpSlot* self = f->qp_find(q->qp.qp_num)) self->state = IBV_QPS_ERR;
      q->dv_ci = pi;  // the rest cannot be parsed past it
      return true;
    }
    q->sq.push_back(std::move(wr));
    q->dv_ci = static_cast<uint16_t>(q->dv_ci + bbs);
  }
  return any;
}

uint8_t* rq_bytes(SoftQp* q) {
  return reinterpret_cast<uint8_t*>(q->dv_rq.data());
}

// Reads the receive WQE at `index` into `wr`: data segments up to the one
// with kInvalidLkey or the end of the stride. A segment with the inline bit
// or a byte count of 0 (2 GiB to a NIC: never what a receive means) makes it
// malformed; its message then completes with a local length error.
RecvWr read_recv_wqe(SoftQp* q, uint16_t index) {
  const uint8_t* wqe = rq_bytes(q) + size_t{index & (q->dv_rq_cnt - 1u)} * q->dv_rq_stride;
  RecvWr wr{index, {}, false};
  for (uint32_t off = 0; off + mlx5::kSegSize <= q->dv_rq_stride; off += mlx5::kSegSize) {
    const mlx5::DataSeg d = mlx5::read_data(wqe + off);
    if (d.lkey == mlx5::kInvalidLkey) break;
    if (d.length == 0 || (d.length & 0x80000000u) || wr.sge.size() >= kMaxSge) {
      wr.malformed = true;
      wr.sge.clear();
      break;
    }
    wr.sge.push_back(ibv_sge{d.addr, d.length, d.lkey});
  }
  return wr;
}

// Fetches the receive WQEs announced by the receive doorbell record. More
// than the queue holds is a producer overrun: those are taken as malformed.
bool fetch_rq(SoftQp* q) {
  const uint16_t pi =
      static_cast<uint16_t>(be32toh(__atomic_load_n(&q->dv_dbrec[0], __ATOMIC_ACQUIRE)) & 0xffff);
  bool any = false;
  while (q->dv_rq_ci != pi) {
    any = true;
    RecvWr wr = read_recv_wqe(q, q->dv_rq_ci);
    if (q->rq.size() >= q->dv_rq_cnt) {
      wr.malformed = true;
      wr.sge.clear();
    }
    q->rq.push_back(std::move(wr));
    q->dv_rq_ci = static_cast<uint16_t>(q->dv_rq_ci + 1);
  }
  return any;
}

// An mlx5-mode CQ raises its event once a CQE lies past the consumer index
// its arm doorbell named.
void check_arm(SoftCq* c) {
  if (!c->dv || !c->channel) return;
  const uint64_t db =
      __atomic_load_n(&c->dv_uar[mlx5::kCqDoorbell / sizeof(uint64_t)], __ATOMIC_ACQUIRE);
  if (db == c->dv_arm_served) return;
  const uint32_t ci = static_cast<uint32_t>(be64toh(db) >> 32) & 0xffffff;
  if (((c->dv_produced - ci) & 0xffffff) == 0) return;
  c->dv_arm_served = db;
  cq_event(c);
}

bool step() {
  Provider& p = provider();
  std::lock_guard guard(p.lock);
  Fabric::Guard g(p.fabric);
  bool any = false;
  const pid_t self = getpid();
  for (SoftQp* q : p.qps) {
    if (q->owner != self) continue;
    auto* scq = reinterpret_cast<SoftCq*>(q->qp.send_cq);
    auto* rcq = reinterpret_cast<SoftCq*>(q->qp.recv_cq);
    if (q->dv) any |= fetch(p.fabric, q) | fetch_rq(q);
    if (q->dv || scq->channel) any |= run_sq(p.fabric, q);
    if (rcq->dv || rcq->channel) any |= run_rq(p.fabric, q);
    check_arm(scq);
    check_arm(rcq);
  }
  return any;
}

void loop() {
  unsigned idle = 0;
  while (!engine().stop.load(std::memory_order_relaxed)) {
    if (step()) {
      idle = 0;
    } else if (++idle < 256) {
      sched_yield();
    } else {
      // An idle device stops hogging a core and the fabric lock: 50 us
      // sleeps, growing to 1 ms the longer it stays idle (it lives as long
      // as the process, and a test that counts the process's CPU time must
      // not see it).
      usleep(std::min(50u << std::min((idle - 256) / 64, 5u), 1000u));
    }
  }
}

// fork(): the child must not inherit the provider lock held by the device
// thread, nor believe it has a device thread.
void before_fork() {
  provider().lock.lock();
}
void after_fork_parent() {
  provider().lock.unlock();
}
void after_fork_child() {
  new (&provider().lock) std::recursive_mutex;
  engine().thread = nullptr;
  engine().pid = 0;
}

}  // namespace

void start_engine() {
  Engine& e = engine();
  if (e.thread && e.pid == getpid()) return;
  static const bool registered = [] {
    pthread_atfork(before_fork, after_fork_parent, after_fork_child);
    return true;
  }();
  (void)registered;
  e.pid = getpid();
  e.thread = new std::thread(loop);
}

bool soft_mlx5_supported(ibv_device*) {
  return true;
}

int soft_mlx5_qp_info(ibv_qp* qp, Mlx5QpInfo* out) {
  Provider& p = provider();
  std::lock_guard guard(p.lock);
  auto* q = reinterpret_cast<SoftQp*>(qp);
  if (!q->dv) {
    const uint32_t wqe_bytes =
        std::max<uint32_t>(2 * mlx5::kSegSize + q->cap.max_send_sge * mlx5::kSegSize,
                           2 * mlx5::kSegSize + ((4 + q->cap.max_inline_data + 15) & ~15u));
    q->dv_max_bbs = std::min(kMaxWqeBbs, (wqe_bytes + kBb - 1) / kBb);
    q->dv_wqe_cnt = pow2_at_least(uint64_t{q->cap.max_send_wr} * q->dv_max_bbs);
    q->dv_sq.assign(q->dv_wqe_cnt * kBb / 8, 0);
    q->dv_bf.assign(2 * kBfSize / 8, 0);
    if (!q->rq.empty()) return EBUSY;  // receives already posted the verbs way
    q->dv_rq_stride = pow2_at_least(std::max<uint64_t>(1, q->cap.max_recv_sge) * mlx5::kSegSize);
    q->dv_rq_cnt = pow2_at_least(std::max<uint32_t>(1, q->cap.max_recv_wr));
    q->dv_rq.assign(uint64_t{q->dv_rq_cnt} * q->dv_rq_stride / 8, 0);
    q->dv = true;
  }
  out->sq_buf = sq_bytes(q);
  out->sq_wqe_cnt = q->dv_wqe_cnt;
  out->sq_stride = kBb;
  out->dbrec = q->dv_dbrec;
  out->rq_buf = rq_bytes(q);
  out->rq_wqe_cnt = q->dv_rq_cnt;
  out->rq_stride = q->dv_rq_stride;
  out->bf_reg = reinterpret_cast<uint8_t*>(q->dv_bf.data());
  out->bf_size = kBfSize;
  start_engine();
  return 0;
}

int soft_mlx5_cq_info(ibv_cq* cq, Mlx5CqInfo* out) {
  Provider& p = provider();
  std::lock_guard guard(p.lock);
  auto* c = reinterpret_cast<SoftCq*>(cq);
  if (!c->dv) {
    if (!c->wcs.empty()) return EBUSY;  // completions already reported the verbs way
    c->dv_cnt = pow2_at_least(static_cast<uint64_t>(cq->cqe) + 1);
    c->dv_buf.assign(uint64_t{c->dv_cnt} * mlx5::kCqeSize / 8, 0);
    c->dv_uar.assign(4096 / sizeof(uint64_t), 0);
    auto* b = reinterpret_cast<uint8_t*>(c->dv_buf.data());
    for (uint32_t i = 0; i < c->dv_cnt; ++i) {
      b[i * mlx5::kCqeSize + 63] = mlx5::cqe_op_own(mlx5::kCqeInvalid, true);
    }
    c->dv = true;
  }
  out->buf = reinterpret_cast<uint8_t*>(c->dv_buf.data());
  out->cqe_cnt = c->dv_cnt;
  out->cqe_size = mlx5::kCqeSize;
  out->dbrec = c->dv_dbrec;
  out->cq_uar = reinterpret_cast<uint8_t*>(c->dv_uar.data());
  // Never 0, so that an arm doorbell is never all zeros.
  out->cqn = (static_cast<uint32_t>(reinterpret_cast<uintptr_t>(c) >> 6) & 0x7fffff) | 0x800000;
  start_engine();
  return 0;
}

int dv_post_recv(SoftQp* q, ibv_recv_wr* wr, ibv_recv_wr** bad) {
  uint16_t pi =
      static_cast<uint16_t>(be32toh(__atomic_load_n(&q->dv_dbrec[0], __ATOMIC_ACQUIRE)) & 0xffff);
  for (; wr; wr = wr->next) {
    // A slot is free again once its receive completed.
    if (static_cast<uint16_t>(pi - q->rq_done) >= q->dv_rq_cnt) {
      *bad = wr;
      return ENOMEM;
    }
    uint8_t* wqe = rq_bytes(q) + size_t{pi & (q->dv_rq_cnt - 1u)} * q->dv_rq_stride;
    if (!mlx5::write_recv_wqe(wqe, q->dv_rq_stride, wr->sg_list, wr->num_sge)) {
      *bad = wr;
      return EINVAL;
    }
    pi = static_cast<uint16_t>(pi + 1);
    __atomic_store_n(&q->dv_dbrec[0], htobe32(pi), __ATOMIC_RELEASE);
  }
  return 0;
}

void dv_push_cqe(SoftCq* c, const ibv_wc& wc) {
  const uint32_t ci = be32toh(__atomic_load_n(&c->dv_dbrec[0], __ATOMIC_ACQUIRE)) & 0xffffff;
  if (((c->dv_produced - ci) & 0xffffff) >= c->dv_cnt) {
    c->overrun = true;  // a NIC moves the CQ to error; the completion is lost
    return;
  }
  uint8_t* cqe = reinterpret_cast<uint8_t*>(c->dv_buf.data()) +
                 (c->dv_produced & (c->dv_cnt - 1)) * mlx5::kCqeSize;
  const bool recv = wc.opcode == IBV_WC_RECV;
  mlx5::Cqe f{};
  f.qpn = wc.qp_num;
  f.wqe_counter = static_cast<uint16_t>(wc.wr_id);
  f.byte_count = wc.byte_len;
  uint8_t opcode = recv ? mlx5::kCqeRespSend : mlx5::kCqeReq;
  if (wc.status != IBV_WC_SUCCESS) {
    opcode = recv ? mlx5::kCqeRespErr : mlx5::kCqeReqErr;
    f.syndrome = mlx5::status_syndrome(wc.status);
  }
  mlx5::write_cqe_fields(cqe, f);
  const bool owner = (c->dv_produced / c->dv_cnt) & 1;
  __atomic_store_n(&cqe[63], mlx5::cqe_op_own(opcode, owner), __ATOMIC_RELEASE);
  c->dv_produced = (c->dv_produced + 1) & 0xffffff;
}

}  // namespace mc::uct::ib::soft
