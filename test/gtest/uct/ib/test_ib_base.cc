// SPDX-License-Identifier: Apache-2.0
// White-box tests of the verbs base: port bandwidth and MTU arithmetic, the
// RC addresses and connection messages, and the verbs table loader.
#include <gtest/gtest.h>

#include <cstring>

#include "uct/ib/base/ib_device.h"
#include "uct/ib/base/ib_verbs.h"
#include "uct/ib/rc/rc_wire.h"

namespace mc::uct::ib {
namespace {

using ucs::Result;
using ucs::Status;

TEST(IbBase, PortBandwidthIsSpeedTimesWidthTimesEncoding) {
  // SDR 1x: 2.5 Gb/s with 8b/10b = 2 Gb/s = 250 MB/s.
  EXPECT_DOUBLE_EQ(port_bandwidth(1, 1), 250e6);
  // QDR 4x: 10 Gb/s x 4 x 0.8 = 32 Gb/s.
  EXPECT_DOUBLE_EQ(port_bandwidth(4, 2), 4e9);
  // EDR 4x: 25.78125 Gb/s x 4 x 64/66 = 100 Gb/s.
  EXPECT_DOUBLE_EQ(port_bandwidth(32, 2), 12.5e9);
  // HDR 2x (width code 16).
  EXPECT_NEAR(port_bandwidth(64, 16), 53.125e9 * 2 * 64 / 66 / 8, 1);
  // NDR 4x.
  EXPECT_NEAR(port_bandwidth(128, 2), 106.25e9 * 4 * 64 / 66 / 8, 1);
  EXPECT_EQ(port_bandwidth(3, 2), 0);  // not a speed code
  EXPECT_EQ(port_bandwidth(32, 3), 0);  // not a width code
}

TEST(IbBase, MtuConversions) {
  EXPECT_EQ(mtu_bytes(IBV_MTU_256), 256u);
  EXPECT_EQ(mtu_bytes(IBV_MTU_4096), 4096u);
  EXPECT_EQ(mtu_bytes(static_cast<ibv_mtu>(0)), 0u);
  EXPECT_EQ(mtu_from_bytes(1024), IBV_MTU_1024);
  EXPECT_EQ(mtu_from_bytes(4096), IBV_MTU_4096);
  EXPECT_EQ(mtu_from_bytes(1000), IBV_MTU_1024);  // rounds up to a valid MTU
}

TEST(IbBase, LibibverbsLoadsOrSaysWhy) {
  std::string why;
  Result<const VerbsOps*> ops = verbs_ops_libibverbs(&why);
  if (ops.ok()) {
    EXPECT_STREQ((*ops)->provider, "verbs");
    EXPECT_NE((*ops)->post_send, nullptr);
    EXPECT_NE((*ops)->poll_cq, nullptr);
  } else {
    EXPECT_EQ(ops.status(), Status::NoDevice);
    EXPECT_FALSE(why.empty());
  }
}

TEST(IbBase, WcStatusStringsNameTheCause) {
  EXPECT_STREQ(wc_status_string(IBV_WC_REM_ACCESS_ERR), "remote access error");
  EXPECT_STREQ(wc_status_string(IBV_WC_LOC_LEN_ERR), "local length error");
  EXPECT_STREQ(wc_status_string(IBV_WC_WR_FLUSH_ERR), "work request flushed");
}

}  // namespace
}  // namespace mc::uct::ib

namespace mc::uct::ib::rc {
namespace {

using ucs::Result;
using ucs::Status;

TEST(RcWire, AddressesRoundTripAndRejectBadInput) {
  DeviceAddr d;
  d.link_layer = IBV_LINK_LAYER_ETHERNET;
  d.lid = 7;
  d.guid = 0x1122334455667788ull;
  for (int i = 0; i < 16; ++i) d.gid.raw[i] = static_cast<uint8_t>(i * 3);
  std::vector<uint8_t> p = pack(d);
  ASSERT_EQ(p.size(), kDeviceAddrLen);
  Result<DeviceAddr> back = unpack_device_addr(p, nullptr);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->guid, d.guid);
  EXPECT_EQ(back->lid, 7);
  EXPECT_EQ(std::memcmp(back->gid.raw, d.gid.raw, 16), 0);
  std::string why;
  p[0] = kWireVersion + 1;
  EXPECT_EQ(unpack_device_addr(p, &why).status(), Status::BadData);
  EXPECT_NE(why.find("version"), std::string::npos) << why;
  p.pop_back();
  EXPECT_EQ(unpack_device_addr(p, nullptr).status(), Status::BadData);

  IfaceAddr a{0x0100007f, 4242};
  std::vector<uint8_t> ia = pack(a);
  ASSERT_EQ(ia.size(), kIfaceAddrLen);
  ASSERT_TRUE(unpack_iface_addr(ia, nullptr).ok());
  EXPECT_EQ(unpack_iface_addr(ia, nullptr)->port, 4242);
  ia[5] = ia[6] = 0;  // port 0
  EXPECT_EQ(unpack_iface_addr(ia, nullptr).status(), Status::BadData);
}

TEST(RcWire, ConnectionMessageRoundTripsAndEveryTruncationFails) {
  ConnMsg m;
  m.dev.guid = 42;
  m.mtu = 4096;
  m.qps = {{0x123, 0x456}, {0x789, 0xffffff}};
  const std::vector<uint8_t> framed = pack_framed(m);
  const std::span<const uint8_t> body(framed.data() + 4, framed.size() - 4);
  Result<ConnMsg> back = unpack_conn_msg(body, nullptr);
  ASSERT_TRUE(back.ok());
  ASSERT_EQ(back->qps.size(), 2u);
  EXPECT_EQ(back->qps[1].qpn, 0x789u);
  EXPECT_EQ(back->qps[1].psn, 0xffffffu);
  EXPECT_EQ(back->mtu, 4096);
  for (size_t cut = 0; cut < body.size(); ++cut) {
    EXPECT_FALSE(unpack_conn_msg(body.first(cut), nullptr).ok()) << cut;
  }
  std::vector<uint8_t> longer(body.begin(), body.end());
  longer.push_back(0);
  EXPECT_FALSE(unpack_conn_msg(longer, nullptr).ok());
  std::vector<uint8_t> bad(body.begin(), body.end());
  bad[5] = static_cast<uint8_t>(kMaxQpPerEp + 1);  // qp count
  EXPECT_FALSE(unpack_conn_msg(bad, nullptr).ok());
  bad = std::vector<uint8_t>(body.begin(), body.end());
  bad[4] = kWireVersion + 1;
  std::string why;
  EXPECT_FALSE(unpack_conn_msg(bad, &why).ok());
  EXPECT_NE(why.find("version"), std::string::npos) << why;
}

}  // namespace
}  // namespace mc::uct::ib::rc
