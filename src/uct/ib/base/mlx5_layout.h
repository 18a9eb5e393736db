// SPDX-License-Identifier: Apache-2.0
// mlx5 work queue and completion queue entry layouts (PRM), written and read
// byte by byte, big-endian, independent of rdma-core's structs: what rc_mlx5
// posts and polls, and what the soft provider's device executes and writes.
// Unit-tested against mlx5dv.h.
#pragma once

#include <infiniband/verbs.h>

#include <cstddef>
#include <cstdint>

namespace mc::uct::ib::mlx5 {

inline constexpr size_t kSegSize = 16;  ///< one WQE basic block segment (DS)
inline constexpr size_t kCqeSize = 64;

/// Offset of the CQ doorbell in the CQ's UAR page (arming: be64 of
/// (arm sn << 28 | command | consumer index) << 32 | cqn).
inline constexpr size_t kCqDoorbell = 0x20;
/// Arm command of the CQ doorbell: an event for the next completion.
inline constexpr uint32_t kCqArmNext = 0;

/// Opcodes of the control segment (PRM "Send WQE opcodes").
enum Opcode : uint8_t { kOpRdmaWrite = 0x08, kOpSend = 0x0a, kOpRdmaRead = 0x10 };
/// fm_ce_se: request a CQE for this WQE (CE = 2: "always").
inline constexpr uint8_t kCqUpdate = 2 << 2;

inline void put_be16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v >> 8);
  p[1] = static_cast<uint8_t>(v);
}
inline void put_be32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (24 - 8 * i));
}
inline void put_be64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (56 - 8 * i));
}
inline uint16_t get_be16(const uint8_t* p) {
  return static_cast<uint16_t>(p[0] << 8 | p[1]);
}
inline uint32_t get_be32(const uint8_t* p) {
  return uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | p[3];
}

inline uint64_t get_be64(const uint8_t* p) {
  return uint64_t{get_be32(p)} << 32 | get_be32(p + 4);
}

/// Control segment, 16 bytes:
///   0: u8 opmod | u16 wqe index | u8 opcode   (one be32)
///   4: u24 qp number | u8 ds (16-byte segments in the WQE)   (one be32)
///   8: u8 signature | u8 rsvd[2] | u8 fm_ce_se
///  12: be32 immediate
inline void write_ctrl(uint8_t* seg, uint16_t wqe_index, uint8_t opcode, uint8_t opmod,
                       uint32_t qpn, uint8_t ds, uint8_t fm_ce_se, uint32_t imm = 0) {
  put_be32(seg, uint32_t{opmod} << 24 | uint32_t{wqe_index} << 8 | opcode);
  put_be32(seg + 4, (qpn & 0xffffff) << 8 | ds);
  seg[8] = 0;
  seg[9] = seg[10] = 0;
  seg[11] = fm_ce_se;
  put_be32(seg + 12, imm);
}

/// What a device reads of a control segment.
struct Ctrl {
  uint8_t opmod;
  uint16_t wqe_index;
  uint8_t opcode;
  uint32_t qpn;
  uint8_t ds;
  uint8_t fm_ce_se;
};
inline Ctrl read_ctrl(const uint8_t* seg) {
  const uint32_t w0 = get_be32(seg), w1 = get_be32(seg + 4);
  return Ctrl{static_cast<uint8_t>(w0 >> 24),  static_cast<uint16_t>(w0 >> 8),
              static_cast<uint8_t>(w0),        w1 >> 8,
              static_cast<uint8_t>(w1 & 0x3f), seg[11]};
}

/// Remote address segment, 16 bytes: be64 address | be32 rkey | u32 reserved.
inline void write_raddr(uint8_t* seg, uint64_t addr, uint32_t rkey) {
  put_be64(seg, addr);
  put_be32(seg + 8, rkey);
  put_be32(seg + 12, 0);
}

/// Data (pointer) segment, 16 bytes: be32 byte count | be32 lkey | be64 address.
inline void write_data(uint8_t* seg, uint32_t length, uint32_t lkey, uint64_t addr) {
  put_be32(seg, length);
  put_be32(seg + 4, lkey);
  put_be64(seg + 8, addr);
}

/// What a device reads of a data segment.
struct DataSeg {
  uint32_t length;
  uint32_t lkey;
  uint64_t addr;
};
inline DataSeg read_data(const uint8_t* seg) {
  return DataSeg{get_be32(seg), get_be32(seg + 4), get_be64(seg + 8)};
}

/// lkey of the data segment that ends a receive WQE with fewer segments
/// than its stride holds (PRM: MLX5_INVALID_LKEY).
inline constexpr uint32_t kInvalidLkey = 0x100;

/// Receive WQE of an RC receive queue (no control segment): `stride` bytes
/// (a power of two, >= 16) of data segments, one per SGE; when fewer than
/// stride / 16, the next segment is byte count 0, lkey kInvalidLkey,
/// address 0. Returns false, writing nothing, when the SGEs do not fit.
inline bool write_recv_wqe(uint8_t* wqe, size_t stride, const ibv_sge* sge, int num_sge) {
  if (num_sge < 0 || size_t(num_sge) * kSegSize > stride) return false;
  for (int i = 0; i < num_sge; ++i) {
    write_data(wqe + size_t(i) * kSegSize, sge[i].length, sge[i].lkey, sge[i].addr);
  }
  if (size_t(num_sge) * kSegSize < stride) {
    write_data(wqe + size_t(num_sge) * kSegSize, 0, kInvalidLkey, 0);
  }
  return true;
}

/// Inline data segment header: be32 (0x80000000 | byte count), data follows.
inline void write_inline_header(uint8_t* seg, uint32_t length) {
  put_be32(seg, 0x80000000u | length);
}

/// CQE opcodes (the high nibble of the last byte).
enum CqeOpcode : uint8_t {
  kCqeReq = 0,
  kCqeRespSend = 2,
  kCqeRespErr = 14,
  kCqeReqErr = 13,
  kCqeInvalid = 15
};
/// Error syndromes of an error CQE (PRM "CQE error syndrome").
enum Syndrome : uint8_t {
  kSyndLocalLength = 0x01,
  kSyndLocalQpOp = 0x02,
  kSyndLocalProtection = 0x04,
  kSyndWrFlush = 0x05,
  kSyndRemoteAccess = 0x13,
  kSyndTransportRetryExceeded = 0x15,
  kSyndRnrRetryExceeded = 0x16,
  kSyndRemoteInvalidRequest = 0x12,
  kSyndRemoteOp = 0x14,
};

/// The NIC's completion status of an error syndrome, as libmlx5 maps it.
inline ibv_wc_status syndrome_status(uint8_t syndrome) {
  switch (syndrome) {
    case kSyndLocalLength: return IBV_WC_LOC_LEN_ERR;
    case kSyndLocalQpOp: return IBV_WC_LOC_QP_OP_ERR;
    case kSyndLocalProtection: return IBV_WC_LOC_PROT_ERR;
    case kSyndWrFlush: return IBV_WC_WR_FLUSH_ERR;
    case kSyndRemoteInvalidRequest: return IBV_WC_REM_INV_REQ_ERR;
    case kSyndRemoteAccess: return IBV_WC_REM_ACCESS_ERR;
    case kSyndRemoteOp: return IBV_WC_REM_OP_ERR;
    case kSyndTransportRetryExceeded: return IBV_WC_RETRY_EXC_ERR;
    case kSyndRnrRetryExceeded: return IBV_WC_RNR_RETRY_EXC_ERR;
    default: return IBV_WC_GENERAL_ERR;
  }
}

/// The syndrome a NIC reports for a completion status (the inverse).
inline uint8_t status_syndrome(ibv_wc_status status) {
  switch (status) {
    case IBV_WC_LOC_LEN_ERR: return kSyndLocalLength;
    case IBV_WC_LOC_QP_OP_ERR: return kSyndLocalQpOp;
    case IBV_WC_LOC_PROT_ERR: return kSyndLocalProtection;
    case IBV_WC_WR_FLUSH_ERR: return kSyndWrFlush;
    case IBV_WC_REM_INV_REQ_ERR: return kSyndRemoteInvalidRequest;
    case IBV_WC_REM_ACCESS_ERR: return kSyndRemoteAccess;
    case IBV_WC_REM_OP_ERR: return kSyndRemoteOp;
    case IBV_WC_RETRY_EXC_ERR: return kSyndTransportRetryExceeded;
    case IBV_WC_RNR_RETRY_EXC_ERR: return kSyndRnrRetryExceeded;
    default: return 0xff;
  }
}

/// What the poller needs of a 64-byte CQE.
struct Cqe {
  uint8_t opcode;           ///< byte 63 >> 4
  bool owner;               ///< byte 63 bit 0: flips each pass over the CQ
  uint16_t wqe_counter;     ///< bytes 60-61: index of the completed WQE
  uint32_t qpn;             ///< bytes 56-59, low 24 bits
  uint32_t byte_count;      ///< bytes 44-47 (receives)
  uint8_t syndrome;         ///< byte 55 of an error CQE
  uint8_t vendor_syndrome;  ///< byte 54 of an error CQE
};

/// Writes the fields read_cqe reads, owner byte last (bytes 0-43 and the
/// rest stay as they were: a device fills them, this poller ignores them).
/// The caller orders the owner byte after the rest (a release store).
inline void write_cqe_fields(uint8_t* cqe, const Cqe& c) {
  put_be32(cqe + 44, c.byte_count);
  cqe[54] = c.vendor_syndrome;
  cqe[55] = c.syndrome;
  put_be32(cqe + 56, c.qpn & 0xffffff);
  put_be16(cqe + 60, c.wqe_counter);
  cqe[62] = 0;
}
inline uint8_t cqe_op_own(uint8_t opcode, bool owner) {
  return static_cast<uint8_t>(opcode << 4 | (owner ? 1 : 0));
}

inline Cqe read_cqe(const uint8_t* cqe) {
  Cqe c{};
  c.opcode = cqe[63] >> 4;
  c.owner = cqe[63] & 1;
  c.wqe_counter = get_be16(cqe + 60);
  c.qpn = get_be32(cqe + 56) & 0xffffff;
  c.byte_count = get_be32(cqe + 44);
  if (c.opcode == kCqeReqErr || c.opcode == kCqeRespErr) {
    c.syndrome = cqe[55];
    c.vendor_syndrome = cqe[54];
  }
  return c;
}

}  // namespace mc::uct::ib::mlx5
