// SPDX-License-Identifier: Apache-2.0
// The mlx5 WQE and CQE layouts of src/uct/ib/rc_mlx5 against rdma-core's
// mlx5dv.h (its structs, offsets and inline segment setters).
#include <gtest/gtest.h>
#include <infiniband/mlx5dv.h>

#include <cstddef>
#include <cstring>

#include "uct/ib/base/mlx5_layout.h"

namespace mc::uct::ib::mlx5 {
namespace {

TEST(Mlx5Layout, ConstantsMatchMlx5dv) {
  EXPECT_EQ(kOpRdmaWrite, MLX5_OPCODE_RDMA_WRITE);
  EXPECT_EQ(kOpRdmaRead, MLX5_OPCODE_RDMA_READ);
  EXPECT_EQ(kOpSend, MLX5_OPCODE_SEND);
  EXPECT_EQ(kCqUpdate, MLX5_WQE_CTRL_CQ_UPDATE);
  EXPECT_EQ(kCqeReqErr, MLX5_CQE_REQ_ERR);
  EXPECT_EQ(kCqeRespErr, MLX5_CQE_RESP_ERR);
  EXPECT_EQ(kCqeReq, MLX5_CQE_REQ);
  EXPECT_EQ(kCqeRespSend, MLX5_CQE_RESP_SEND);
  EXPECT_EQ(kCqeInvalid, MLX5_CQE_INVALID);
  EXPECT_EQ(kSyndLocalLength, MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR);
  EXPECT_EQ(kSyndLocalProtection, MLX5_CQE_SYNDROME_LOCAL_PROT_ERR);
  EXPECT_EQ(kSyndWrFlush, MLX5_CQE_SYNDROME_WR_FLUSH_ERR);
  EXPECT_EQ(kSyndRemoteAccess, MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR);
  EXPECT_EQ(kSyndTransportRetryExceeded, MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR);
  EXPECT_EQ(kSyndRnrRetryExceeded, MLX5_CQE_SYNDROME_RNR_RETRY_EXC_ERR);
  EXPECT_EQ(sizeof(mlx5_wqe_ctrl_seg), kSegSize);
  EXPECT_EQ(sizeof(mlx5_wqe_raddr_seg), kSegSize);
  EXPECT_EQ(sizeof(mlx5_wqe_data_seg), kSegSize);
  EXPECT_EQ(sizeof(mlx5_cqe64), kCqeSize);
}

TEST(Mlx5Layout, ControlSegmentBytesAreMlx5dvs) {
  uint8_t ours[kSegSize], theirs[kSegSize];
  std::memset(theirs, 0, sizeof(theirs));  // the setter leaves the reserved bytes
  write_ctrl(ours, 0x1234, kOpRdmaWrite, 0, 0xabcdef, 3, kCqUpdate, 0x01020304);
  mlx5dv_set_ctrl_seg(reinterpret_cast<mlx5_wqe_ctrl_seg*>(theirs), 0x1234, MLX5_OPCODE_RDMA_WRITE,
                      0, 0xabcdef, MLX5_WQE_CTRL_CQ_UPDATE, 3, 0, htobe32(0x01020304));
  EXPECT_EQ(std::memcmp(ours, theirs, kSegSize), 0);
  // By hand, from the PRM: wqe index at bytes 1-2, opcode at 3, qpn at 4-6, ds at 7.
  EXPECT_EQ(ours[1], 0x12);
  EXPECT_EQ(ours[2], 0x34);
  EXPECT_EQ(ours[3], 0x08);
  EXPECT_EQ(ours[4], 0xab);
  EXPECT_EQ(ours[6], 0xef);
  EXPECT_EQ(ours[7], 3);
  EXPECT_EQ(ours[11], 0x08);
}

TEST(Mlx5Layout, DataAndRemoteAddressSegmentsAreMlx5dvs) {
  uint8_t ours[kSegSize], theirs[kSegSize];
  write_data(ours, 4096, 0x11223344, 0x0102030405060708ull);
  mlx5dv_set_data_seg(reinterpret_cast<mlx5_wqe_data_seg*>(theirs), 4096, 0x11223344,
                      0x0102030405060708ull);
  EXPECT_EQ(std::memcmp(ours, theirs, kSegSize), 0);

  write_raddr(ours, 0x8877665544332211ull, 0xcafe);
  mlx5_wqe_raddr_seg r{};
  r.raddr = htobe64(0x8877665544332211ull);
  r.rkey = htobe32(0xcafe);
  EXPECT_EQ(std::memcmp(ours, &r, kSegSize), 0);
  EXPECT_EQ(offsetof(mlx5_wqe_raddr_seg, rkey), 8u);

  write_inline_header(ours, 20);
  EXPECT_EQ(get_be32(ours), MLX5_INLINE_SEG | 20u);
}

TEST(Mlx5Layout, ReceiveWqeIsDataSegmentsEndedByTheInvalidLkey) {
  EXPECT_EQ(kInvalidLkey, uint32_t{MLX5_INVALID_LKEY});
  // Two SGEs in a 64-byte stride: two mlx5dv data segments, then the end marker.
  uint8_t ours[64], theirs[64];
  std::memset(ours, 0xee, sizeof(ours));
  std::memset(theirs, 0xee, sizeof(theirs));
  const ibv_sge sge[2] = {{0x1000, 256, 0x11}, {0x2000, 512, 0x22}};
  ASSERT_TRUE(write_recv_wqe(ours, sizeof(ours), sge, 2));
  auto* d = reinterpret_cast<mlx5_wqe_data_seg*>(theirs);
  mlx5dv_set_data_seg(&d[0], 256, 0x11, 0x1000);
  mlx5dv_set_data_seg(&d[1], 512, 0x22, 0x2000);
  d[2].byte_count = 0;
  d[2].lkey = htobe32(MLX5_INVALID_LKEY);
  d[2].addr = 0;
  EXPECT_EQ(std::memcmp(ours, theirs, sizeof(ours)), 0);  // the fourth segment untouched
  const DataSeg back = read_data(ours + kSegSize);
  EXPECT_EQ(back.length, 512u);
  EXPECT_EQ(back.lkey, 0x22u);
  EXPECT_EQ(back.addr, 0x2000u);
  // A full stride has no end marker; more SGEs than it holds write nothing.
  uint8_t one[kSegSize];
  ASSERT_TRUE(write_recv_wqe(one, sizeof(one), sge, 1));
  EXPECT_EQ(read_data(one).lkey, 0x11u);
  std::memset(ours, 0xee, sizeof(ours));
  EXPECT_FALSE(write_recv_wqe(ours, kSegSize, sge, 2));
  EXPECT_EQ(ours[0], 0xee);
}

TEST(Mlx5Layout, CqeFieldsAreReadAtThePrmOffsets) {
  EXPECT_EQ(offsetof(mlx5_cqe64, byte_cnt), 44u);
  EXPECT_EQ(offsetof(mlx5_cqe64, sop_drop_qpn), 56u);
  EXPECT_EQ(offsetof(mlx5_cqe64, wqe_counter), 60u);
  EXPECT_EQ(offsetof(mlx5_cqe64, op_own), 63u);
  EXPECT_EQ(offsetof(mlx5_err_cqe, syndrome), 55u);
  EXPECT_EQ(offsetof(mlx5_err_cqe, vendor_err_synd), 54u);

  mlx5_cqe64 ok{};
  ok.byte_cnt = htobe32(777);
  ok.sop_drop_qpn = htobe32(0xff000000u | 0x123456);
  ok.wqe_counter = htobe16(0xbeef);
  ok.op_own = static_cast<uint8_t>(MLX5_CQE_RESP_SEND << 4 | 1);
  Cqe c = read_cqe(reinterpret_cast<const uint8_t*>(&ok));
  EXPECT_EQ(c.opcode, kCqeRespSend);
  EXPECT_TRUE(c.owner);
  EXPECT_EQ(c.byte_count, 777u);
  EXPECT_EQ(c.qpn, 0x123456u);
  EXPECT_EQ(c.wqe_counter, 0xbeef);
  EXPECT_EQ(c.syndrome, 0);

  mlx5_err_cqe err{};
  err.syndrome = MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR;
  err.vendor_err_synd = 0x88;
  err.wqe_counter = htobe16(5);
  err.op_own = static_cast<uint8_t>(MLX5_CQE_REQ_ERR << 4);
  c = read_cqe(reinterpret_cast<const uint8_t*>(&err));
  EXPECT_EQ(c.opcode, kCqeReqErr);
  EXPECT_FALSE(c.owner);
  EXPECT_EQ(c.syndrome, kSyndRemoteAccess);
  EXPECT_EQ(c.vendor_syndrome, 0x88);
  EXPECT_EQ(c.wqe_counter, 5);
}

}  // namespace
}  // namespace mc::uct::ib::mlx5
