// SPDX-License-Identifier: Apache-2.0
// Protocol selection against thresholds computed by hand from the model in
// proto_select.cc, forced thresholds, and the O(log n) lookup.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "ucp/proto/proto_select.h"

namespace mc::ucp::test {
namespace {

using namespace proto;

// 1 us overhead, 2 us latency, 1 GB/s; short up to 256 B, bcopy fragments of
// 8 KiB, zcopy up to 1 GiB; registration 10 us.
LanePerf lane(size_t index) {
  LanePerf l;
  l.lane = index;
  l.has_short = l.has_bcopy = l.has_zcopy = true;
  l.max_short = 256;
  l.max_bcopy = 8192;
  l.max_zcopy = size_t{1} << 30;
  l.latency = 2e-6;
  l.overhead = 1e-6;
  l.bandwidth = 1e9;
  l.reg_cost = uct::LinearFunc{10e-6, 0};
  return l;
}

ProtoSelectParams params() {
  ProtoSelectParams p;
  p.op = Op::Put;
  p.single = lane(0);
  p.copy_bandwidth = 1e10;
  return p;
}

// First size from which line b is strictly cheaper than line a (a wins ties).
size_t crossing(double ca, double ma, double cb, double mb) {
  return static_cast<size_t>(std::floor((cb - ca) / (ma - mb))) + 1;
}

void expect_range(const ProtoTable& t, size_t i, size_t min, size_t max, ProtoKind kind) {
  ASSERT_LT(i, t.ranges().size());
  const ProtoRange& r = t.ranges()[i];
  EXPECT_EQ(r.min, min) << "range " << i;
  EXPECT_EQ(r.max, max) << "range " << i;
  EXPECT_EQ(r.kind, kind) << "range " << i << ": " << proto_kind_name(r.kind);
}

TEST(UcpProto, HandComputedThresholds) {
  const ProtoTable t = select_protocols(params());
  const double m_bcopy = 1e-9 + 1e-10 + 1e-6 / 8192;
  const double m_zcopy = 1e-9 + 1e-6 / double(size_t{1} << 30);
  const size_t z = crossing(3e-6, m_bcopy, 13e-6, m_zcopy);
  EXPECT_GT(z, 40000u);  // about 45 KB
  EXPECT_LT(z, 50000u);
  ASSERT_EQ(t.ranges().size(), 3u);
  expect_range(t, 0, 0, 256, ProtoKind::Short);
  expect_range(t, 1, 257, z - 1, ProtoKind::Bcopy);
  expect_range(t, 2, z, SIZE_MAX, ProtoKind::Zcopy);
}

TEST(UcpProto, RegisteredBufferGoesZeroCopyEarlier) {
  ProtoSelectParams p = params();
  p.registered = true;
  const ProtoTable t = select_protocols(p);
  ASSERT_EQ(t.ranges().size(), 2u);
  expect_range(t, 0, 0, 256, ProtoKind::Short);
  expect_range(t, 1, 257, SIZE_MAX, ProtoKind::Zcopy);
}

TEST(UcpProto, MultiLaneFromTheSliceSizeOrTheCrossing) {
  ProtoSelectParams p = params();
  p.rails = {lane(0), lane(1)};
  p.slice_size = 65536;
  const ProtoTable t = select_protocols(p);
  const double m_zcopy = 1e-9 + 1e-6 / double(size_t{1} << 30);
  const double m_multi = 1.0 / 2e9 + 1e-6 / (65536.0 * 2);
  const size_t x = crossing(13e-6, m_zcopy, 3e-6 + 20e-6, m_multi);
  const size_t multi_from = std::max<size_t>(65537, x);
  const ProtoRange* r = t.lookup(multi_from);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->kind, ProtoKind::MultiZcopy);
  EXPECT_EQ(r->min, multi_from);
  EXPECT_EQ(r->lanes, (std::vector<size_t>{0, 1}));
  EXPECT_EQ(t.lookup(multi_from - 1)->kind, ProtoKind::Zcopy);

  // With a slower second rail the crossing moves later than the slice size.
  p.rails[1].bandwidth = 0.2e9;
  p.slice_size = 16384;
  const ProtoTable slow = select_protocols(p);
  const double m_slow = 1.0 / 1.2e9 + 1e-6 / (16384.0 * 2);
  const size_t x2 = crossing(13e-6, m_zcopy, 23e-6, m_slow);
  EXPECT_GT(x2, 16385u);
  EXPECT_EQ(slow.lookup(x2)->kind, ProtoKind::MultiZcopy);
  EXPECT_EQ(slow.lookup(x2)->min, x2);
}

TEST(UcpProto, ForcedThresholds) {
  ProtoSelectParams p = params();
  p.zcopy_thresh = 1024;
  ProtoTable t = select_protocols(p);
  ASSERT_EQ(t.ranges().size(), 4u);  // zcopy forced below the model's threshold, then chosen
  expect_range(t, 0, 0, 256, ProtoKind::Short);
  expect_range(t, 1, 257, 1023, ProtoKind::Bcopy);
  EXPECT_EQ(t.ranges()[2].min, 1024u);
  EXPECT_EQ(t.ranges()[2].kind, ProtoKind::Zcopy);
  EXPECT_TRUE(t.ranges()[2].forced);
  EXPECT_EQ(t.ranges()[3].kind, ProtoKind::Zcopy);
  EXPECT_FALSE(t.ranges()[3].forced);
  EXPECT_EQ(t.ranges()[3].max, SIZE_MAX);

  p = params();
  p.bcopy_thresh = 64;
  t = select_protocols(p);
  expect_range(t, 0, 0, 63, ProtoKind::Short);
  EXPECT_EQ(t.lookup(64)->kind, ProtoKind::Bcopy);
  EXPECT_TRUE(t.lookup(64)->forced);

  // A forced zero-copy threshold on a lane without zero-copy: bcopy stays.
  p = params();
  p.single.has_zcopy = false;
  p.zcopy_thresh = 1024;
  t = select_protocols(p);
  EXPECT_EQ(t.lookup(size_t{1} << 20)->kind, ProtoKind::Bcopy);
}

TEST(UcpProto, GetHasNoShortAndLookupCoversEverySize) {
  ProtoSelectParams p = params();
  p.op = Op::Get;
  p.single.has_short = false;
  const ProtoTable t = select_protocols(p);
  EXPECT_EQ(t.lookup(0)->kind, ProtoKind::Bcopy);
  for (size_t n : {size_t{0}, size_t{1}, size_t{255}, size_t{4096}, size_t{1} << 20, SIZE_MAX}) {
    const ProtoRange* r = t.lookup(n);
    ASSERT_NE(r, nullptr) << n;
    EXPECT_LE(r->min, n);
    EXPECT_GE(r->max, n);
  }
  std::ostringstream os;
  t.print(os);
  EXPECT_NE(os.str().find("get 0.."), std::string::npos) << os.str();
}

TEST(UcpProto, NoProtocolMeansEmptyTable) {
  ProtoSelectParams p = params();
  p.single.has_short = p.single.has_bcopy = p.single.has_zcopy = false;
  const ProtoTable t = select_protocols(p);
  EXPECT_TRUE(t.ranges().empty());
  EXPECT_EQ(t.lookup(10), nullptr);
}

// Active messages with a registered buffer: short, zcopy (which pays the
// receiver's copy out of the fragments), then rendezvous once its fixed cost
// (three messages and the get's latency) is paid back.
ProtoSelectParams am_params() {
  ProtoSelectParams p = params();
  p.op = Op::Am;
  p.registered = true;
  p.rndv_get = lane(1);
  p.rndv_get->lane = 0;
  return p;
}

TEST(UcpProto, RendezvousFromTheModel) {
  const ProtoTable t = select_protocols(am_params());
  const double m_zcopy = 1e-9 + 1e-6 / double(size_t{1} << 30) + 1e-10;
  const size_t r = crossing(3e-6, m_zcopy, 3 * 3e-6 + 2e-6, 1e-9);
  EXPECT_GT(r, 75000u);  // about 80 KB
  EXPECT_LT(r, 85000u);
  ASSERT_EQ(t.ranges().size(), 3u);
  expect_range(t, 0, 0, 256, ProtoKind::Short);
  expect_range(t, 1, 257, r - 1, ProtoKind::Zcopy);
  expect_range(t, 2, r, SIZE_MAX, ProtoKind::Rndv);
  EXPECT_FALSE(t.ranges()[2].forced);
  std::ostringstream os;
  t.print(os);
  EXPECT_NE(os.str().find(" rndv lane 0"), std::string::npos) << os.str();
}

TEST(UcpProto, ForcedRendezvousThreshold) {
  ProtoSelectParams p = am_params();
  p.rndv_thresh = 4096;
  ProtoTable t = select_protocols(p);
  // Forced below the model's crossing, the model's own choice above it.
  ASSERT_EQ(t.ranges().size(), 4u);
  expect_range(t, 1, 257, 4095, ProtoKind::Zcopy);
  EXPECT_EQ(t.ranges()[2].min, 4096u);
  EXPECT_EQ(t.ranges()[2].kind, ProtoKind::Rndv);
  EXPECT_TRUE(t.ranges()[2].forced);
  EXPECT_EQ(t.ranges()[3].kind, ProtoKind::Rndv);
  EXPECT_FALSE(t.ranges()[3].forced);
  // Far above the model's crossing: eager is forced up to there.
  p.rndv_thresh = size_t{1} << 20;
  t = select_protocols(p);
  ASSERT_EQ(t.ranges().size(), 4u);
  EXPECT_EQ(t.lookup((size_t{1} << 20) - 1)->kind, ProtoKind::Zcopy);
  EXPECT_TRUE(t.lookup((size_t{1} << 20) - 1)->forced);
  EXPECT_EQ(t.lookup(size_t{1} << 20)->kind, ProtoKind::Rndv);
  // inf: never.
  p.rndv_thresh = SIZE_MAX;
  t = select_protocols(p);
  EXPECT_EQ(t.lookup(size_t{1} << 40)->kind, ProtoKind::Zcopy);
}

TEST(UcpProto, NoRendezvousWithoutAZeroCopyGet) {
  ProtoSelectParams p = am_params();
  p.rndv_get->has_zcopy = false;
  p.rndv_thresh = 4096;  // a forced threshold cannot conjure it
  const ProtoTable t = select_protocols(p);
  for (const ProtoRange& r : t.ranges()) EXPECT_NE(r.kind, ProtoKind::Rndv);
  EXPECT_EQ(t.lookup(size_t{1} << 30)->kind, ProtoKind::Zcopy);
  // Put and get never use it.
  p = am_params();
  p.op = Op::Put;
  const ProtoTable put = select_protocols(p);
  for (const ProtoRange& r : put.ranges()) EXPECT_NE(r.kind, ProtoKind::Rndv);
}

}  // namespace
}  // namespace mc::ucp::test
