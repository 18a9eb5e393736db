// SPDX-License-Identifier: Apache-2.0
// The put and get decision of proto/rma_proto.h: the call a slice takes on
// a lane, the limits that cut slices, and each range's immediate entry.
#include <gtest/gtest.h>

#include "ucp/proto/rma_proto.h"

namespace mc::ucp::test::rma_proto {
namespace {

using namespace proto;

// A lane with put short up to 64 B, bcopy up to 8 KiB and zcopy up to
// `max_zcopy` (0: none), gets bcopy and zcopy alike.
LaneRuntime lane(size_t max_bcopy = 8192, size_t max_zcopy = size_t{1} << 20) {
  LaneRuntime lr;
  lr.attr.cap = uct::kCapPutShort | uct::kCapPutBcopy | uct::kCapGetBcopy;
  lr.attr.put.max_short = 64;
  lr.attr.put.max_bcopy = lr.attr.get.max_bcopy = max_bcopy;
  if (max_zcopy > 0) {
    lr.attr.cap |= uct::kCapPutZcopy | uct::kCapGetZcopy;
    lr.attr.put.max_zcopy = lr.attr.get.max_zcopy = max_zcopy;
  }
  return lr;
}

TEST(UcpRmaProto, EachKindTakesItsOwnCallWhereTheSliceFits) {
  const uct::IfaceAttr a = lane().attr;
  EXPECT_EQ(slice_call(Op::Put, ProtoKind::Short, a, 64), SliceCall::Short);
  EXPECT_EQ(slice_call(Op::Put, ProtoKind::Bcopy, a, 64), SliceCall::Bcopy);
  EXPECT_EQ(slice_call(Op::Put, ProtoKind::Zcopy, a, 64), SliceCall::Zcopy);
  EXPECT_EQ(slice_call(Op::Put, ProtoKind::MultiZcopy, a, 4096), SliceCall::Zcopy);
  EXPECT_EQ(slice_call(Op::Get, ProtoKind::Bcopy, a, 4096), SliceCall::Bcopy);
  EXPECT_EQ(slice_call(Op::Get, ProtoKind::Zcopy, a, 4096), SliceCall::Zcopy);
}

TEST(UcpRmaProto, ASliceThatDoesNotFitTakesTheOtherMode) {
  const uct::IfaceAttr a = lane().attr;
  // A short put past put_short's limit goes by bcopy; a get has no short.
  EXPECT_EQ(slice_call(Op::Put, ProtoKind::Short, a, 65), SliceCall::Bcopy);
  EXPECT_EQ(slice_call(Op::Get, ProtoKind::Short, a, 8), SliceCall::Bcopy);
  // Past bcopy's limit a copy kind goes zero-copy, and back.
  EXPECT_EQ(slice_call(Op::Put, ProtoKind::Bcopy, a, 8193), SliceCall::Zcopy);
  const uct::IfaceAttr small_z = lane(8192, 4096).attr;
  EXPECT_EQ(slice_call(Op::Get, ProtoKind::Zcopy, small_z, 8192), SliceCall::Bcopy);
  EXPECT_EQ(slice_call(Op::Get, ProtoKind::Zcopy, small_z, 8193), SliceCall::None);
  // No zero-copy of nothing; bcopy takes it.
  EXPECT_EQ(slice_call(Op::Put, ProtoKind::Zcopy, a, 0), SliceCall::Bcopy);
  const uct::IfaceAttr no_bcopy = [] {
    uct::IfaceAttr x = lane().attr;
    x.cap &= ~uint64_t{uct::kCapGetBcopy};
    return x;
  }();
  EXPECT_EQ(slice_call(Op::Get, ProtoKind::Zcopy, no_bcopy, 0), SliceCall::None);
}

TEST(UcpRmaProto, FragmentIsTheSmallestLimitOfTheLanesThatMayCarryIt) {
  const std::vector<LaneRuntime> rt{lane(8192), lane(2048), lane(4096, 0)};
  EXPECT_EQ(slice_limit(Op::Put, ProtoKind::Bcopy, rt[1].attr), 2048u);
  EXPECT_EQ(slice_limit(Op::Put, ProtoKind::Zcopy, rt[2].attr), 4096u);  // bcopy stands in
  EXPECT_EQ(rma_fragment(Op::Put, ProtoKind::Bcopy, rt, {0}, 100000), 8192u);
  EXPECT_EQ(rma_fragment(Op::Put, ProtoKind::Bcopy, rt, {0, 1}, 100000), 2048u);
  EXPECT_EQ(rma_fragment(Op::Put, ProtoKind::Zcopy, rt, {0, 2}, 100000), 4096u);
  // A short kind is never cut.
  EXPECT_EQ(rma_fragment(Op::Put, ProtoKind::Short, rt, {1}, 100000), 100000u);
}

TEST(UcpRmaProto, EntriesCoverOneSliceOnTheFirstLaneOverEveryStandByRail) {
  const std::vector<LaneRuntime> rt{lane(8192), lane(2048), lane(8192)};
  const ProtoTable t(Op::Put, {ProtoRange{0, 64, ProtoKind::Short, {0}},
                               ProtoRange{65, 8192, ProtoKind::Bcopy, {0}},
                               ProtoRange{8193, 65536, ProtoKind::Zcopy, {2}},
                               ProtoRange{65537, SIZE_MAX, ProtoKind::MultiZcopy, {0, 2}}});
  const std::vector<RmaEntry> e = rma_entries(t, rt, {1});
  ASSERT_EQ(e.size(), 4u);
  EXPECT_EQ(e[0].lane, 0u);
  EXPECT_EQ(e[0].max, SIZE_MAX);  // short: one call whatever the rails
  EXPECT_EQ(e[1].max, 2048u);     // rail 1 would cut bcopy at 2 KiB
  EXPECT_EQ(e[2].lane, 2u);
  EXPECT_EQ(e[2].max, size_t{1} << 20);
  EXPECT_EQ(e[3].max, 0u);  // several lanes: the general path's
  EXPECT_EQ(rma_entries(t, rt, {})[1].max, 8192u);
}

}  // namespace
}  // namespace mc::ucp::test::rma_proto
