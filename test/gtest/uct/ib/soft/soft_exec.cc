// SPDX-License-Identifier: Apache-2.0
// The soft provider's data path: posting, executing work requests against
// the fabric with a NIC's checks, and polling completions.
#include <signal.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "uct/ib/soft/soft_objects.h"

namespace mc::uct::ib::soft {

namespace {

/// What executing a WR gave: a completion status, or "wait" (a SEND whose
/// target ring is full, as a NIC retries on RNR).
struct ExecResult {
  bool wait = false;
  ibv_wc_status status = IBV_WC_SUCCESS;
};

bool mr_covers(const MrSlot* m, uint64_t addr, uint64_t len) {
  return addr >= m->addr && len <= m->length && addr - m->addr <= m->length - len;
}

// Where `addr` (inside `m`) is in the owner's address space: a dma-buf MR
// is named by its iova, and its pages are the provider's mapping.
uint64_t mr_local(const MrSlot* m, uint64_t addr) {
  return m->base + (addr - m->addr);
}

// Copies between this process and `pid` (memcpy when it is this process).
bool copy_remote(int32_t pid, bool to_remote, void* local, uint64_t remote, size_t len) {
  if (len == 0) return true;
  if (pid == getpid()) {
    auto* r = reinterpret_cast<void*>(remote);
    std::memmove(to_remote ? r : local, to_remote ? local : r, len);
    return true;
  }
  iovec l{local, len}, r{reinterpret_cast<void*>(remote), len};
  const ssize_t n =
      to_remote ? process_vm_writev(pid, &l, 1, &r, 1, 0) : process_vm_readv(pid, &l, 1, &r, 1, 0);
  return n == static_cast<ssize_t>(len);
}

// Checks the local SGEs (lkey of this process, in bounds, local write when
// the data lands there) and returns their total length and, in `local`,
// where each one's bytes are in this process.
bool check_local(Fabric* f, const std::vector<ibv_sge>& sge, bool write, uint64_t* total,
                 std::vector<uint8_t*>* local) {
  *total = 0;
  local->clear();
  for (const ibv_sge& s : sge) {
    const MrSlot* m = f->mr_find(s.lkey);
    if (!m || m->pid != getpid() || !mr_covers(m, s.addr, s.length) ||
        (write && !(m->access & IBV_ACCESS_LOCAL_WRITE))) {
      return false;
    }
    *total += s.length;
    local->push_back(reinterpret_cast<uint8_t*>(mr_local(m, s.addr)));
  }
  return true;
}

ExecResult exec_rdma(Fabric* f, SendWr& wr, QpSlot* remote, uint64_t total,
                     const std::vector<uint8_t*>& local) {
  const bool write = wr.opcode == IBV_WR_RDMA_WRITE;
  if (total == 0) return {};  // zero-length RDMA checks no rkey
  MrSlot* m = f->mr_find(wr.rkey);
  const unsigned need = write ? IBV_ACCESS_REMOTE_WRITE : IBV_ACCESS_REMOTE_READ;
  if (!m || m->dev != remote->dev || m->pid != remote->pid || !(m->access & need) ||
      !mr_covers(m, wr.remote_addr, total)) {
    remote->state = IBV_QPS_ERR;  // the responder's QP fails with the NAK too
    return {false, IBV_WC_REM_ACCESS_ERR};
  }
  uint64_t raddr = mr_local(m, wr.remote_addr);
  if (!wr.inline_data.empty()) {
    if (!copy_remote(m->pid, true, wr.inline_data.data(), raddr, total)) {
      return {false, IBV_WC_REM_ACCESS_ERR};
    }
    return {};
  }
  for (size_t i = 0; i < wr.sge.size(); ++i) {
    if (!copy_remote(m->pid, write, local[i], raddr, wr.sge[i].length)) {
      return {false, IBV_WC_REM_ACCESS_ERR};
    }
    raddr += wr.sge[i].length;
  }
  return {};
}

ExecResult exec_send(SendWr& wr, QpSlot* remote, uint32_t src_qpn, uint64_t total,
                     const std::vector<uint8_t*>& local) {
  if (total > kMsgMax) return {false, IBV_WC_LOC_LEN_ERR};
  if (remote->tail - remote->head >= kRingSlots) return {true, IBV_WC_SUCCESS};
  RingSlot& slot = remote->ring[remote->tail % kRingSlots];
  uint8_t* p = slot.data;
  if (!wr.inline_data.empty()) {
    std::memcpy(p, wr.inline_data.data(), total);
  } else {
    for (size_t i = 0; i < wr.sge.size(); ++i) {
      std::memcpy(p, local[i], wr.sge[i].length);
      p += wr.sge[i].length;
    }
  }
  slot.length = static_cast<uint32_t>(total);
  slot.src_qpn = src_qpn;
  ++remote->tail;
  return {};
}

bool alive(int32_t pid) {
  return pid == getpid() || kill(pid, 0) == 0 || errno != ESRCH;
}

ExecResult exec(Fabric* f, SoftQp* q, QpSlot* self, SendWr& wr) {
  QpSlot* remote = f->qp_find(self->dest_qpn);
  if (remote && !alive(remote->pid)) remote = nullptr;  // its process died
  // A failed device, a failed or vanished peer QP, or one not connected
  // back to us: the NIC retries until its transport retry counter runs out.
  if (self->failed || f->device_failed(q->dev) || !remote || remote->failed ||
      f->device_failed(remote->dev) || remote->dest_qpn != self->qpn ||
      (remote->state != IBV_QPS_RTR && remote->state != IBV_QPS_RTS)) {
    return {false, IBV_WC_RETRY_EXC_ERR};
  }
  uint64_t total = wr.inline_data.size();
  const bool lands_locally = wr.opcode == IBV_WR_RDMA_READ;
  std::vector<uint8_t*> local;
  if (wr.inline_data.empty() && !check_local(f, wr.sge, lands_locally, &total, &local)) {
    return {false, IBV_WC_LOC_PROT_ERR};
  }
  switch (wr.opcode) {
    case IBV_WR_RDMA_WRITE:
    case IBV_WR_RDMA_READ: return exec_rdma(f, wr, remote, total, local);
    case IBV_WR_SEND: return exec_send(wr, remote, self->qpn, total, local);
    default: return {false, IBV_WC_LOC_QP_OP_ERR};
  }
}

ibv_wc_opcode wc_opcode(ibv_wr_opcode op) {
  switch (op) {
    case IBV_WR_RDMA_WRITE: return IBV_WC_RDMA_WRITE;
    case IBV_WR_RDMA_READ: return IBV_WC_RDMA_READ;
    default: return IBV_WC_SEND;
  }
}

}  // namespace

// Executes the send queue in order until it is empty or a SEND waits. In
// the error state every WR completes with a flush error, signalled or not.
bool run_sq(Fabric* f, SoftQp* q) {
  auto* cq = reinterpret_cast<SoftCq*>(q->qp.send_cq);
  bool any = false;
  while (!q->sq.empty()) {
    SendWr& wr = q->sq.front();
    QpSlot* self = f->qp_find(q->qp.qp_num);
    ExecResult r{false, IBV_WC_WR_FLUSH_ERR};
    if (self && self->state == IBV_QPS_RTS) r = exec(f, q, self, wr);
    if (r.wait) return any;
    any = true;
    if (r.status != IBV_WC_SUCCESS && self) self->state = IBV_QPS_ERR;
    if (r.status != IBV_WC_SUCCESS || q->sig_all || (wr.flags & IBV_SEND_SIGNALED)) {
      ibv_wc wc{};
      wc.wr_id = wr.wr_id;
      wc.status = r.status;
      wc.opcode = wc_opcode(wr.opcode);
      wc.qp_num = q->qp.qp_num;
      push_wc(cq, wc);
    }
    q->sq.pop_front();
  }
  return any;
}

// Matches arrived messages to posted receives; flushes them in the error state.
bool run_rq(Fabric* f, SoftQp* q) {
  auto* cq = reinterpret_cast<SoftCq*>(q->qp.recv_cq);
  QpSlot* self = f->qp_find(q->qp.qp_num);
  bool any = false;
  while (!q->rq.empty()) {
    RecvWr& rwr = q->rq.front();
    ibv_wc wc{};
    wc.wr_id = rwr.wr_id;
    wc.qp_num = q->qp.qp_num;
    wc.opcode = IBV_WC_RECV;
    if (!self || self->state == IBV_QPS_ERR) {
      wc.status = IBV_WC_WR_FLUSH_ERR;
    } else if (self->head == self->tail) {
      return any;
    } else {
      RingSlot& m = self->ring[self->head % kRingSlots];
      uint64_t room = 0;
      std::vector<uint8_t*> local;
      if (rwr.malformed) {
        wc.status = IBV_WC_LOC_LEN_ERR;
      } else if (!check_local(f, rwr.sge, true, &room, &local)) {
        wc.status = IBV_WC_LOC_PROT_ERR;
      } else if (room < m.length) {
        wc.status = IBV_WC_LOC_LEN_ERR;
      } else {
        const uint8_t* p = m.data;
        for (size_t i = 0; i < rwr.sge.size(); ++i) {
          const size_t n = std::min<size_t>(rwr.sge[i].length, m.data + m.length - p);
          std::memcpy(local[i], p, n);
          p += n;
        }
        wc.byte_len = m.length;
        wc.src_qp = m.src_qpn;
      }
      ++self->head;
      if (wc.status != IBV_WC_SUCCESS) self->state = IBV_QPS_ERR;
    }
    // mlx5 reports the receive queue's WQE counter, not the wr_id (a
    // receive fetched from the RQ buffer carries its counter as wr_id).
    if (cq->dv && !q->dv) wc.wr_id = q->rq_done;
    ++q->rq_done;
    push_wc(cq, wc);
    q->rq.pop_front();
    any = true;
  }
  return any;
}

void cq_event(SoftCq* cq) {
  SoftChannel* ch = cq->channel;
  if (!ch) return;
  ch->events.push_back(&cq->cq);
  const uint64_t one = 1;
  (void)!write(ch->ch.fd, &one, sizeof(one));
}

void push_wc(SoftCq* cq, const ibv_wc& wc) {
  if (cq->dv) {
    dv_push_cqe(cq, wc);
    return;
  }
  if (cq->armed) {
    cq->armed = false;
    cq_event(cq);
  }
  if (static_cast<int>(cq->wcs.size()) >= cq->cq.cqe) {
    cq->overrun = true;  // a NIC raises IBV_EVENT_CQ_ERR; the completion is lost
    return;
  }
  cq->wcs.push_back(wc);
}

int soft_post_send(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad) {
  Provider& p = provider();
  std::lock_guard guard(p.lock);
  auto* q = reinterpret_cast<SoftQp*>(qp);
  Fabric::Guard g(p.fabric);
  QpSlot* self = p.fabric->qp_find(qp->qp_num);
  if (!self || (self->state != IBV_QPS_RTS && self->state != IBV_QPS_ERR)) {
    *bad = wr;
    return EINVAL;
  }
  for (; wr; wr = wr->next) {
    if (q->sq.size() >= q->cap.max_send_wr) {
      *bad = wr;
      return ENOMEM;
    }
    if (wr->num_sge < 0 || static_cast<uint32_t>(wr->num_sge) > q->cap.max_send_sge) {
      *bad = wr;
      return EINVAL;
    }
    SendWr s{wr->wr_id,
             wr->opcode,
             wr->send_flags,
             {wr->sg_list, wr->sg_list + wr->num_sge},
             {},
             wr->wr.rdma.remote_addr,
             wr->wr.rdma.rkey};
    if (wr->send_flags & IBV_SEND_INLINE) {
      size_t total = 0;
      for (const ibv_sge& e : s.sge) total += e.length;
      if (total > q->cap.max_inline_data || wr->opcode == IBV_WR_RDMA_READ) {
        *bad = wr;
        return EINVAL;
      }
      for (const ibv_sge& e : s.sge) {
        const auto* d = reinterpret_cast<const uint8_t*>(e.addr);
        s.inline_data.insert(s.inline_data.end(), d, d + e.length);
      }
      s.sge.clear();
    }
    q->sq.push_back(std::move(s));
  }
  run_sq(p.fabric, q);
  return 0;
}

int soft_post_recv(ibv_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** bad) {
  Provider& p = provider();
  std::lock_guard guard(p.lock);
  auto* q = reinterpret_cast<SoftQp*>(qp);
  Fabric::Guard g(p.fabric);
  QpSlot* self = p.fabric->qp_find(qp->qp_num);
  if (!self || self->state == IBV_QPS_RESET) {
    *bad = wr;
    return EINVAL;
  }
  if (q->dv) return dv_post_recv(q, wr, bad);
  for (; wr; wr = wr->next) {
    if (q->rq.size() >= q->cap.max_recv_wr || wr->num_sge < 0 ||
        static_cast<uint32_t>(wr->num_sge) > q->cap.max_recv_sge) {
      *bad = wr;
      return ENOMEM;
    }
    q->rq.push_back(RecvWr{wr->wr_id, {wr->sg_list, wr->sg_list + wr->num_sge}});
  }
  return 0;
}

int soft_poll_cq(ibv_cq* cq, int n, ibv_wc* wc) {
  Provider& p = provider();
  std::lock_guard guard(p.lock);
  auto* c = reinterpret_cast<SoftCq*>(cq);
  {
    Fabric::Guard g(p.fabric);
    for (SoftQp* q : p.qps) {
      if (q->qp.send_cq == cq) run_sq(p.fabric, q);
      if (q->qp.recv_cq == cq) run_rq(p.fabric, q);
    }
  }
  if (c->overrun) return -1;
  int i = 0;
  for (; i < n && !c->wcs.empty(); ++i) {
    wc[i] = c->wcs.front();
    c->wcs.pop_front();
  }
  return i;
}

}  // namespace mc::uct::ib::soft
