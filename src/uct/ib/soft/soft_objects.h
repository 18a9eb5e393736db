// SPDX-License-Identifier: Apache-2.0
// The soft provider's objects behind the verbs handles (each starts with the
// libibverbs struct it stands for), and the process-wide provider state.
#pragma once

#include <deque>
#include <mutex>
#include <vector>

#include "uct/ib/soft/soft_fabric.h"
#include "uct/ib/soft/soft_verbs.h"

namespace mc::uct::ib::soft {

inline constexpr uint32_t kMaxWr = 4096;
inline constexpr uint32_t kMaxSge = 16;
inline constexpr uint32_t kMaxInline = 256;
inline constexpr int kMaxCqe = 65536;

struct SoftDevice {
  ibv_device dev;
  uint32_t index;
};

struct SoftContext {
  ibv_context ctx;
  uint32_t dev;
};

struct SoftCq {
  ibv_cq cq;
  std::deque<ibv_wc> wcs;
  bool overrun = false;
};

struct SendWr {
  uint64_t wr_id;
  ibv_wr_opcode opcode;
  unsigned flags;
  std::vector<ibv_sge> sge;
  std::vector<uint8_t> inline_data;  ///< IBV_SEND_INLINE: copied at post time
  uint64_t remote_addr;
  uint32_t rkey;
};

struct RecvWr {
  uint64_t wr_id;
  std::vector<ibv_sge> sge;
};

struct SoftQp {
  ibv_qp qp;
  uint32_t dev;
  ibv_qp_cap cap;
  bool sig_all;
  std::deque<SendWr> sq;  ///< posted, not yet executed (a SEND waits for ring room)
  std::deque<RecvWr> rq;
};

/// Process-wide state. `lock` guards the local objects; the fabric lock is
/// taken inside it, never the other way round.
struct Provider {
  std::recursive_mutex lock;
  Fabric* fabric = nullptr;
  unsigned devices = 0;
  std::vector<SoftDevice> device_storage;
  std::vector<SoftQp*> qps;  ///< live local QPs, for poll_cq
};

Provider& provider();

// The data path (soft_exec.cc).
int soft_post_send(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad);
int soft_post_recv(ibv_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** bad);
int soft_poll_cq(ibv_cq* cq, int n, ibv_wc* wc);
/// Pushes a completion (counts an overrun when the CQ is full).
void push_wc(SoftCq* cq, const ibv_wc& wc);

}  // namespace mc::uct::ib::soft
