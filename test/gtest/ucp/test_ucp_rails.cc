// SPDX-License-Identifier: Apache-2.0
// Device preference of puts and gets (RequestParams::rails): two tcp rails,
// loopback and a second network device; the preferred device's lane carries
// every byte, a remote preference steers the same way, small operations
// follow it, and the secondary device takes over when the preferred one is
// cut mid-transfer. Bytes per lane come from LaneRuntime::rma_bytes. With
// one lane a preference cannot reorder, the immediate entries stay.
#include <gtest/gtest.h>

#include <algorithm>

#include "common/net_util.h"
#include "ucp/api/ucp.h"
#include "ucp/core/endpoint.h"
#include "ucp/core/worker.h"
#include "ucp/ucp_test_util.h"
#include "uct/base/component_loader.h"

namespace mc::ucp::test {
namespace {

using ucs::Result;
using ucs::Status;

class UcpRails : public testing::Test, protected UcpPair {
 protected:
  void SetUp() override {
    if (!uct::find_component("tcp")) GTEST_SKIP() << "tcp transport is not available";
    if (!mc::test::second_device(&dev_, &dev_addr_)) {
      GTEST_SKIP() << "no second network device is up";
    }
    ctx_ = make_context({{"MC_TLS", "tcp"},
                         {"MC_NET_DEVICES", "lo," + dev_},
                         {"MC_MAX_RMA_RAILS", "2"},
                         {"MC_LOOPBACK_RAILS", "2"},
                         {"MC_TRANSFER_TIMEOUT", "60s"},
                         // A cut lane stays failed however slow the test
                         // runs (reconnection has its own tests).
                         {"MC_LANE_RECONNECT_INTERVAL", "off"}},
                        &sources_);
    ASSERT_NO_FATAL_FAILURE(open_workers());
    ASSERT_EQ(ucp::impl(*ep_).lanes().rma_bw_lanes.size(), 2u) << "two tcp rails expected";
    for (size_t lane : ucp::impl(*ep_).lanes().rma_bw_lanes) {
      const wireup::Lane& l = ucp::impl(*ep_).lanes().lanes[lane];
      (ucp::impl(*workers_[0]).local_resources()[l.local].dev_name == "lo" ? lo_ : other_) = lane;
    }
    ASSERT_NE(lo_, other_);

    src_.resize(kSize);
    for (size_t i = 0; i < kSize; ++i) src_[i] = static_cast<uint8_t>((i * 13 + (i >> 12)) | 1);
    target_.assign(kSize, 0);
    auto smh = MemHandle::map(*ctx_, src_.data(), kSize);
    auto tmh = MemHandle::map(*ctx_, target_.data(), kSize);
    ASSERT_TRUE(smh.ok() && tmh.ok());
    smh_ = std::move(*smh);
    tmh_ = std::move(*tmh);
    auto rkey = ep_->rkey_unpack(*tmh_->rkey_pack());
    ASSERT_TRUE(rkey.ok());
    rkey_ = std::move(*rkey);
  }

  void TearDown() override {
    rkey_.reset();
    ep_.reset();
    smh_.reset();
    tmh_.reset();
    close_pair();
  }

  uint64_t bytes(size_t lane) const { return ucp::impl(*ep_).lane_runtime()[lane].rma_bytes; }

  // Puts `n` bytes of src_ to target_ with `rails`, flushes, and checks them.
  void put(size_t n, const RailPreference* rails) {
    RequestParams rp;
    rp.memh = smh_.get();
    rp.rails = rails;
    std::fill(target_.begin(), target_.begin() + n, 0);
    ASSERT_EQ(wait(ep_->put_nbx(src_.data(), n, remote(), *rkey_, rp)), Status::Ok);
    ASSERT_EQ(wait(ep_->flush()), Status::Ok);
    EXPECT_TRUE(std::equal(src_.begin(), src_.begin() + n, target_.begin())) << n << " bytes";
  }

  // Gets `n` bytes of target_ into src_ (target_ holds src_'s pattern).
  void get(size_t n, const RailPreference* rails) {
    RequestParams rp;
    rp.memh = smh_.get();
    rp.rails = rails;
    std::copy(src_.begin(), src_.begin() + n, target_.begin());
    std::fill(src_.begin(), src_.begin() + n, 0);
    ASSERT_EQ(wait(ep_->get_nbx(src_.data(), n, remote(), *rkey_, rp)), Status::Ok);
    EXPECT_TRUE(std::equal(src_.begin(), src_.begin() + n, target_.begin())) << n << " bytes";
  }

  uint64_t remote() const { return reinterpret_cast<uintptr_t>(target_.data()); }

  static constexpr size_t kSize = size_t{8} << 20;
  std::string dev_;
  in_addr dev_addr_{};
  std::vector<uint8_t> src_, target_;
  std::unique_ptr<MemHandle> smh_, tmh_;
  std::unique_ptr<Rkey> rkey_;
  size_t lo_ = SIZE_MAX, other_ = SIZE_MAX;
};

TEST_F(UcpRails, RanksFollowBothSidesLists) {
  RailPreference rails;
  rails.local_preferred = {dev_};
  rails.local_secondary = {"lo"};
  std::vector<LaneRank> ranked = ep_->rank_lanes(rails);
  ASSERT_GE(ranked.size(), 2u);
  EXPECT_EQ(ranked[0].lane, other_);
  EXPECT_EQ(ranked[0].rank, 0u);
  EXPECT_EQ(ranked[1].lane, lo_);
  EXPECT_EQ(ranked[1].rank, 1u);
  // The remote side prefers loopback: 1 + 0 beats 0 + 2.
  rails.remote_preferred = {"lo"};
  ranked = ep_->rank_lanes(rails);
  EXPECT_EQ(ranked[0].lane, lo_);
  EXPECT_EQ(ranked[0].rank, 1u);
  EXPECT_EQ(ranked[1].rank, 2u);
  // A device no list names ranks 2 on that side.
  RailPreference elsewhere;
  elsewhere.local_preferred = {"mlx5_7"};
  for (const LaneRank& r : ep_->rank_lanes(elsewhere)) EXPECT_EQ(r.rank, 2u);
}

TEST_F(UcpRails, WithoutPreferenceBothRailsCarry) {
  const proto::ProtoRange* range =
      ucp::impl(*ep_).protocols().table(proto::Op::Put, true).lookup(kSize);
  ASSERT_NE(range, nullptr);
  ASSERT_EQ(range->kind, proto::ProtoKind::MultiZcopy);
  const uint64_t lo0 = bytes(lo_), other0 = bytes(other_);
  put(kSize, nullptr);
  EXPECT_GT(bytes(lo_), lo0);
  EXPECT_GT(bytes(other_), other0);
  EXPECT_EQ(bytes(lo_) - lo0 + bytes(other_) - other0, kSize);
}

// The API's view of the lanes (Endpoint::lane_info and lane_counters,
// Worker::iface_resources) says what the endpoint itself holds.
TEST_F(UcpRails, LaneInfoIsWhatTheEndpointHolds) {
  put(kSize, nullptr);
  const ucp::EndpointImpl& e = ucp::impl(*ep_);
  const std::vector<LaneInfo> info = ep_->lane_info();
  const std::vector<ResourceInfo>& resources = ctx_->resources();
  std::vector<LaneCounters> counters;
  ep_->lane_counters(&counters);
  ASSERT_EQ(info.size(), e.lanes().lanes.size());
  for (size_t i = 0; i < info.size(); ++i) {
    SCOPED_TRACE("lane " + std::to_string(i));
    const wireup::Lane& l = e.lanes().lanes[i];
    const wireup::AddressEntry& remote = e.peer().ifaces[l.remote];
    EXPECT_EQ(info[i].lane, i);
    EXPECT_EQ(info[i].local_resource, l.local);
    EXPECT_EQ(info[i].local_device, ucp::impl(*workers_[0]).local_resources()[l.local].name());
    EXPECT_EQ(resources.at(l.local).name(), info[i].local_device);
    EXPECT_EQ(info[i].remote_device, remote.tl_name + "/" + remote.dev_name);
    EXPECT_TRUE(info[i].healthy);
    EXPECT_EQ(info[i].rma_bytes, e.lane_runtime()[i].rma_bytes);
    EXPECT_EQ(info[i].rma_done_bytes, info[i].rma_bytes) << "flushed, so every byte completed";
    ASSERT_LT(i, counters.size());
    EXPECT_EQ(counters[i].local_resource, info[i].local_resource);
    EXPECT_EQ(counters[i].rma_bytes, info[i].rma_bytes);
  }
  EXPECT_GT(info[lo_].rma_bytes, 0u);
  EXPECT_GT(info[other_].rma_bytes, 0u);
  const std::vector<size_t> opened = workers_[0]->iface_resources();
  EXPECT_EQ(opened.size(), ucp::impl(*workers_[0]).ifaces().size());
  for (const LaneInfo& li : info) {
    EXPECT_NE(std::find(opened.begin(), opened.end(), li.local_resource), opened.end())
        << li.local_device << " carries a lane but has no iface";
  }
}

TEST_F(UcpRails, PreferredDeviceCarriesEveryByte) {
  for (const std::string& preferred : {dev_, std::string("lo")}) {
    SCOPED_TRACE("preferred " + preferred);
    RailPreference rails;
    rails.local_preferred = {preferred};
    const size_t want = preferred == "lo" ? lo_ : other_;
    const size_t avoid = preferred == "lo" ? other_ : lo_;
    for (size_t n : {size_t{100}, size_t{300000}, kSize}) {
      const uint64_t want0 = bytes(want), avoid0 = bytes(avoid);
      put(n, &rails);
      get(n, &rails);
      EXPECT_EQ(bytes(want) - want0, 2 * n) << n << " bytes";
      EXPECT_EQ(bytes(avoid), avoid0) << n << " bytes";
    }
  }
}

TEST_F(UcpRails, RemotePreferenceSteersToo) {
  RailPreference rails;
  rails.remote_preferred = {dev_};
  rails.remote_secondary = {"lo"};
  const uint64_t other0 = bytes(other_), lo0 = bytes(lo_);
  put(kSize, &rails);
  EXPECT_EQ(bytes(other_) - other0, kSize);
  EXPECT_EQ(bytes(lo_), lo0);
}

TEST_F(UcpRails, SecondaryTakesOverWhenPreferredIsCut) {
  RailPreference rails;
  rails.local_preferred = {dev_};
  rails.local_secondary = {"lo"};
  RequestParams rp;
  rp.memh = smh_.get();
  rp.rails = &rails;
  const uint64_t lo0 = bytes(lo_);
  Result<std::shared_ptr<Request>> r = ep_->put_nbx(src_.data(), kSize, remote(), *rkey_, rp);
  ASSERT_TRUE(r.ok());
  while (target_[0] == 0 && !(*r)->completed()) {
    for (auto& w : workers_) w->progress();
  }
  ASSERT_FALSE((*r)->completed()) << "the put finished before the cut";
  EXPECT_EQ(bytes(lo_), lo0) << "the secondary lane carried slices before the cut";
  EXPECT_GT(mc::test::cut_sockets_on(dev_addr_), 0) << "no socket on " << dev_ << " to cut";
  ASSERT_EQ(wait(*r), Status::Ok);
  ASSERT_EQ(wait(ep_->flush()), Status::Ok);
  EXPECT_TRUE(src_ == target_) << "the put did not deliver every byte";
  EXPECT_GT(bytes(lo_), lo0) << "the secondary lane took no slice";
  EXPECT_TRUE(is_error(ucp::impl(*ep_).lane_runtime()[other_].status));

  // The preferred lane failed: the next put goes to the secondary at once.
  const std::vector<LaneRank> ranked = ep_->rank_lanes(rails);
  EXPECT_EQ(ranked[0].lane, lo_);
  EXPECT_FALSE(ranked.back().healthy);
  const uint64_t lo1 = bytes(lo_);
  put(kSize, &rails);
  EXPECT_EQ(bytes(lo_) - lo1, kSize);
}

// One lane, which no preference can reorder (sm between workers of one
// host: no network device): a put or get with a preference goes by its
// range's immediate entry, as without one. Done in the call, it returns the
// worker's one completed request rather than a request of its own.
class UcpRailsOneLane : public testing::Test, protected UcpPair {
 protected:
  void SetUp() override {
    if (!uct::find_component("sm")) GTEST_SKIP() << "sm transport is not available";
    ctx_ = make_context({{"MC_TLS", "sm"}}, &sources_);
    ASSERT_NO_FATAL_FAILURE(open_workers());
    const wireup::LaneSelection& sel = ucp::impl(*ep_).lanes();
    ASSERT_EQ(sel.rma_lanes.size(), 1u);
    ASSERT_TRUE(sel.rma_bw_lanes.empty() || sel.rma_bw_lanes == sel.rma_lanes);
  }
  void TearDown() override {
    rkey_.reset();
    tmh_.reset();
    close_pair();
  }

  std::vector<uint8_t> target_ = std::vector<uint8_t>(65536, 0);
  std::unique_ptr<MemHandle> tmh_;
  std::unique_ptr<Rkey> rkey_;
};

TEST_F(UcpRailsOneLane, APreferenceKeepsTheImmediateEntry) {
  ASSERT_NO_FATAL_FAILURE(map_remote(target_, &tmh_, &rkey_));
  RailPreference rails;
  rails.local_preferred = {"mlx5_0"};
  rails.round_robin = true;
  RequestParams rp;
  rp.rails = &rails;
  const uint64_t remote = reinterpret_cast<uintptr_t>(target_.data());
  std::vector<uint8_t> src(8192);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i * 7 + 1);
  Result<std::shared_ptr<Request>> a = ep_->put_nbx(src.data(), 8, remote, *rkey_, rp);
  Result<std::shared_ptr<Request>> b = ep_->put_nbx(src.data(), 4096, remote + 4096, *rkey_, rp);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE((*a)->completed() && (*b)->completed());
  EXPECT_EQ(a->get(), b->get()) << "each a request of its own: the general path took them";
  std::vector<uint8_t> back(4096, 0);
  Result<std::shared_ptr<Request>> g = ep_->get_nbx(back.data(), 4096, remote + 4096, *rkey_, rp);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(wait(*g), Status::Ok);
  ASSERT_EQ(wait(ep_->flush()), Status::Ok);
  EXPECT_TRUE(std::equal(src.begin(), src.begin() + 8, target_.begin()));
  EXPECT_TRUE(std::equal(src.begin(), src.begin() + 4096, target_.begin() + 4096));
  EXPECT_TRUE(std::equal(src.begin(), src.begin() + 4096, back.begin()));
}

}  // namespace
}  // namespace mc::ucp::test
