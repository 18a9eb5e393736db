// SPDX-License-Identifier: Apache-2.0
// The soft provider's objects behind the verbs handles (each starts with the
// libibverbs struct it stands for), and the process-wide provider state.
#pragma once

#include <sys/types.h>

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

/// A completion channel: an eventfd that becomes readable when an armed CQ
/// of the channel gets a completion, and the CQs that did, in order.
struct SoftChannel {
  ibv_comp_channel ch;
  std::deque<ibv_cq*> events;
};

struct SoftCq {
  ibv_cq cq;
  std::deque<ibv_wc> wcs;
  bool overrun = false;
  SoftChannel* channel = nullptr;
  bool armed = false;  ///< req_notify_cq: the next completion raises an event
  // mlx5 mode (after mlx5_cq_info): completions go to `dv_buf` as 64-byte
  // CQEs, the owner bit flipping on each pass; dv_dbrec[0] is the consumer
  // index the poller writes back (be32), which keeps the device from
  // overwriting CQEs not yet read.
  bool dv = false;
  std::vector<uint64_t> dv_buf;
  uint32_t dv_cnt = 0;
  uint32_t dv_produced = 0;
  alignas(8) uint32_t dv_dbrec[2] = {0, 0};  ///< [0] consumer index, [1] arm (be32)
  /// The fake UAR page: the poller arms the CQ by writing its doorbell at
  /// kCqDoorbell; an arm not served yet differs from dv_arm_served.
  std::vector<uint64_t> dv_uar;
  uint64_t dv_arm_served = 0;
};

/// Raises an event on the channel of `cq` (with the provider lock held).
void cq_event(SoftCq* cq);

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
  /// A receive WQE a NIC cannot use (mlx5 mode): the message it would take
  /// completes with a local length error and lands nowhere.
  bool malformed = false;
};

struct SoftQp {
  ibv_qp qp;
  uint32_t dev;
  pid_t owner;  ///< the process that created it (a forked child inherits a copy)
  ibv_qp_cap cap;
  bool sig_all;
  std::deque<SendWr> sq;  ///< posted, not yet executed (a SEND waits for ring room)
  std::deque<RecvWr> rq;
  uint32_t rq_done = 0;  ///< receives completed (the RQ WQE counter of mlx5 mode)
  // mlx5 mode (after mlx5_qp_info): WQEs are posted in `dv_sq` (basic blocks
  // of 64 bytes) and announced by the send counter in dv_dbrec[1] (be32);
  // the device thread fetches them from dv_ci on.
  bool dv = false;
  std::vector<uint64_t> dv_sq;
  uint32_t dv_wqe_cnt = 0;
  uint32_t dv_max_bbs = 0;
  uint16_t dv_ci = 0;
  std::vector<uint64_t> dv_bf;  ///< the fake BlueFlame page: written, never read
  // Receive WQEs are posted in `dv_rq` (dv_rq_cnt WQEs of dv_rq_stride
  // bytes) and announced by the receive counter in dv_dbrec[0] (be32); the
  // device fetches them from dv_rq_ci on into `rq`.
  std::vector<uint64_t> dv_rq;
  uint32_t dv_rq_cnt = 0;
  uint32_t dv_rq_stride = 0;
  uint16_t dv_rq_ci = 0;
  alignas(8) uint32_t dv_dbrec[2] = {0, 0};
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
/// Pushes a completion (counts an overrun when the CQ is full); in mlx5
/// mode writes it as a CQE.
void push_wc(SoftCq* cq, const ibv_wc& wc);
/// Executes `q`'s send queue / matches arrived messages to its receives
/// (with the provider and fabric locks held). True when anything happened.
bool run_sq(Fabric* f, SoftQp* q);
bool run_rq(Fabric* f, SoftQp* q);
/// Starts this process's device thread (with the provider lock held). It
/// runs mlx5-mode queues, and the queues of CQs with a completion channel,
/// so a process asleep on its channel learns of arrived messages.
void start_engine();

// mlx5 mode (soft_dv.cc): the direct-verbs entries of the table.
bool soft_mlx5_supported(ibv_device* device);
int soft_mlx5_qp_info(ibv_qp* qp, Mlx5QpInfo* out);
int soft_mlx5_cq_info(ibv_cq* cq, Mlx5CqInfo* out);
/// Posts receives the way libmlx5's ibv_post_recv does in mlx5 mode: as
/// WQEs into the receive queue buffer (with the provider lock held).
int dv_post_recv(SoftQp* q, ibv_recv_wr* wr, ibv_recv_wr** bad);
/// Writes `wc` as a CQE into a CQ in mlx5 mode.
void dv_push_cqe(SoftCq* cq, const ibv_wc& wc);

}  // namespace mc::uct::ib::soft
