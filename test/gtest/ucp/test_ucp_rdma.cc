// SPDX-License-Identifier: Apache-2.0
// UCP over the RDMA transports (rc_verbs, rc_mlx5) on the soft verbs
// provider's two devices: put, get and active messages at every size class
// with data checked, over two rails; and a device failed in the middle of a
// multi-rail put: the put completes on the other device, every byte right;
// destination device affinity between a peer on mcsoft1 and both devices.
// On real hardware (MC_IB_PROVIDER=verbs) the failover case is skipped: it
// needs the soft provider's fault switch.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

#include "ucp/api/ucp.h"
#include "ucp/core/endpoint.h"
#include "ucp/core/worker.h"
#include "ucp/ucp_test_util.h"
#include "uct/base/component_loader.h"
#include "uct/ib/soft/soft_fabric.h"
#include "uct/uct_test.h"

namespace mc::ucp::test {
namespace {

using ucs::Result;
using ucs::Status;

class UcpRdma : public testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    uct::test::use_soft_verbs_unless_told();
    if (!uct::find_component(GetParam())) GTEST_SKIP() << GetParam() << " is not loaded";
    const char* provider = std::getenv("MC_IB_PROVIDER");
    const char* fabric = std::getenv("MC_IB_SOFT_FABRIC");
    soft_ = provider && std::string(provider) == "soft";
    std::map<std::string, std::string> env = {{"MC_TLS", GetParam()},
                                              {"MC_MAX_RMA_RAILS", "2"},
                                              {"MC_TRANSFER_TIMEOUT", "60s"},
                                              {"MC_LANE_RECONNECT_INTERVAL", "off"}};
    if (provider) env["MC_IB_PROVIDER"] = provider;
    if (fabric) env["MC_IB_SOFT_FABRIC"] = fabric_ = fabric;
    ctx_ = make_context(env, &sources_);
    ASSERT_TRUE(ctx_);
    for (int i = 0; i < 2; ++i) {
      Result<std::unique_ptr<Worker>> w = Worker::create(*ctx_);
      ASSERT_TRUE(w.ok());
      workers_.push_back(std::move(*w));
    }
    Result<std::unique_ptr<Endpoint>> ep = workers_[0]->ep_create(workers_[1]->address());
    if (!ep.ok()) GTEST_SKIP() << "no " << GetParam() << " device: " << ep.status();
    ep_ = std::move(*ep);
  }

  void TearDown() override {
    ep_.reset();
    workers_.clear();
    ctx_.reset();
    if (soft_ && !fabric_.empty()) (void)uct::ib::soft::set_device_failed(fabric_, 1, false);
  }

  Status wait(Result<std::shared_ptr<Request>> r) {
    if (!r.ok()) return r.status();
    while (!(*r)->completed()) {
      for (auto& w : workers_) w->progress();
    }
    return (*r)->status();
  }

  bool soft_ = false;
  std::string fabric_;
  ucs::config::Sources sources_;
  std::unique_ptr<Context> ctx_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::unique_ptr<Endpoint> ep_;
};

TEST_P(UcpRdma, PutGetAndActiveMessagesOverTwoRails) {
  ASSERT_EQ(ucp::impl(*ep_).lanes().rma_bw_lanes.size(), 2u) << "one rail per soft device expected";
  const size_t max = size_t{8} << 20;
  std::vector<uint8_t> target(max, 0), src(max), back(max);
  for (size_t i = 0; i < max; ++i) src[i] = static_cast<uint8_t>(i * 31 + (i >> 9) + 1);
  auto tmh = MemHandle::map(*ctx_, target.data(), max);
  auto smh = MemHandle::map(*ctx_, src.data(), max);
  auto bmh = MemHandle::map(*ctx_, back.data(), max);
  ASSERT_TRUE(tmh.ok() && smh.ok() && bmh.ok());
  auto rkey = ep_->rkey_unpack(*(*tmh)->rkey_pack());
  ASSERT_TRUE(rkey.ok());
  size_t delivered = 0, delivered_bytes = 0;
  workers_[1]->set_am_handler(3, [&](const void* data, size_t length) {
    ++delivered;
    delivered_bytes += length;
    EXPECT_EQ(std::memcmp(data, src.data(), length), 0) << length << "-byte active message";
  });
  const uint64_t remote = reinterpret_cast<uintptr_t>(target.data());
  for (size_t n : {size_t{1}, size_t{8}, size_t{4096}, size_t{65536}, size_t{1} << 20, max}) {
    SCOPED_TRACE(std::to_string(n) + " bytes");
    std::fill(target.begin(), target.begin() + n, 0);
    RequestParams rp;
    rp.memh = smh->get();
    ASSERT_EQ(wait(ep_->put_nbx(src.data(), n, remote, **rkey, rp)), Status::Ok);
    ASSERT_EQ(wait(ep_->flush()), Status::Ok);
    EXPECT_TRUE(std::equal(src.begin(), src.begin() + n, target.begin()));
    std::fill(back.begin(), back.begin() + n, 0);
    rp.memh = bmh->get();
    ASSERT_EQ(wait(ep_->get_nbx(back.data(), n, remote, **rkey, rp)), Status::Ok);
    EXPECT_TRUE(std::equal(src.begin(), src.begin() + n, back.begin()));
    const size_t before = delivered;
    ASSERT_EQ(wait(ep_->am_send_nbx(3, src.data(), n)), Status::Ok);
    spin_until([&] { return delivered != before; },
               [&] {
                 for (auto& w : workers_) w->progress();
               });
    EXPECT_EQ(delivered, before + 1);
  }
}

TEST_P(UcpRdma, DeviceFailedMidPutCompletesOnTheOtherDevice) {
  if (!soft_) GTEST_SKIP() << "needs the soft provider's fault switch (MC_IB_PROVIDER=soft)";
  ASSERT_EQ(ucp::impl(*ep_).lanes().rma_bw_lanes.size(), 2u) << "one rail per soft device expected";
  const size_t n = size_t{128} << 20;
  std::vector<uint8_t> target(n, 0), src(n);
  for (size_t i = 0; i < n; ++i) src[i] = static_cast<uint8_t>((i * 13 + (i >> 12)) | 1);
  auto tmh = MemHandle::map(*ctx_, target.data(), n);
  auto smh = MemHandle::map(*ctx_, src.data(), n);
  ASSERT_TRUE(tmh.ok() && smh.ok());
  auto rkey = ep_->rkey_unpack(*(*tmh)->rkey_pack());
  ASSERT_TRUE(rkey.ok());
  const proto::ProtoRange* range =
      ucp::impl(*ep_).protocols().table(proto::Op::Put, true).lookup(n);
  ASSERT_NE(range, nullptr);
  ASSERT_EQ(range->kind, proto::ProtoKind::MultiZcopy);
  RequestParams rp;
  rp.memh = smh->get();
  Result<std::shared_ptr<Request>> r =
      ep_->put_nbx(src.data(), n, reinterpret_cast<uintptr_t>(target.data()), **rkey, rp);
  ASSERT_TRUE(r.ok());
  while (target[0] == 0 && !(*r)->completed()) {
    for (auto& w : workers_) w->progress();
  }
  ASSERT_FALSE((*r)->completed()) << "the put finished before the device failed";
  ASSERT_EQ(uct::ib::soft::set_device_failed(fabric_, 1, true), Status::Ok);
  ASSERT_EQ(wait(*r), Status::Ok);
  ASSERT_EQ(wait(ep_->flush()), Status::Ok) << "zero-copy slices complete only once remote";
  EXPECT_TRUE(target == src) << "the put did not deliver every byte";
  size_t failed = 0;
  for (const proto::LaneRuntime& lr : ucp::impl(*ep_).lane_runtime()) failed += is_error(lr.status);
  EXPECT_EQ(failed, 1u) << "exactly the lane on the failed device";
}

INSTANTIATE_TEST_SUITE_P(Rc, UcpRdma, testing::Values("rc_verbs", "rc_mlx5"));

// Destination device affinity (RailPreference::same_device, the engine's
// MC_ENABLE_DEST_DEVICE_AFFINITY): a peer with only mcsoft1 is reached from
// both local devices; with affinity the mcsoft1 -> mcsoft1 lane ranks first
// and carries every byte, mcsoft0 -> mcsoft1 stands by; without it both rank
// alike and both carry.
TEST(UcpRdmaAffinity, SameNameRemoteDeviceRanksFirstAndCarries) {
  uct::test::use_soft_verbs_unless_told();
  if (!uct::find_component("rc_verbs")) GTEST_SKIP() << "rc_verbs is not loaded";
  const char* provider = std::getenv("MC_IB_PROVIDER");
  if (!provider || std::string(provider) != "soft") GTEST_SKIP() << "needs the soft provider";
  std::map<std::string, std::string> env = {
      {"MC_TLS", "rc_verbs"},
      {"MC_MAX_RMA_RAILS", "2"},
      {"MC_IB_PROVIDER", "soft"},
      {"MC_IB_SOFT_FABRIC", std::getenv("MC_IB_SOFT_FABRIC")}};
  ucs::config::Sources s0, s1;
  std::unique_ptr<Context> c0 = make_context(env, &s0);
  env["MC_IB_DEVICES"] = "mcsoft1";
  std::unique_ptr<Context> c1 = make_context(env, &s1);
  ASSERT_TRUE(c0 && c1);
  Result<std::unique_ptr<Worker>> w0 = Worker::create(*c0), w1 = Worker::create(*c1);
  ASSERT_TRUE(w0.ok() && w1.ok());
  Result<std::unique_ptr<Endpoint>> ep = (*w0)->ep_create((*w1)->address());
  ASSERT_TRUE(ep.ok());
  std::map<std::string, size_t> lane_of;  // local device -> lane
  for (size_t lane : ucp::impl(**ep).lanes().rma_bw_lanes) {
    const wireup::Lane& l = ucp::impl(**ep).lanes().lanes[lane];
    EXPECT_EQ(ucp::impl(**ep).peer().ifaces[l.remote].dev_name, "mcsoft1:1");
    lane_of[ucp::impl(**w0).local_resources()[l.local].dev_name] = lane;
  }
  ASSERT_EQ(lane_of.size(), 2u) << "a rail from each local device to mcsoft1";
  const size_t same = lane_of.at("mcsoft1:1"), cross = lane_of.at("mcsoft0:1");

  RailPreference affinity;
  affinity.same_device = true;
  std::vector<LaneRank> ranked = (*ep)->rank_lanes(affinity);
  ASSERT_EQ(ranked.size(), 2u);
  EXPECT_EQ(ranked[0].lane, same);
  EXPECT_EQ(ranked[0].rank, 0u);
  EXPECT_TRUE(ranked[0].carries);
  EXPECT_EQ(ranked[1].lane, cross);
  EXPECT_EQ(ranked[1].rank, 1u);
  EXPECT_FALSE(ranked[1].carries);
  for (const LaneRank& r : (*ep)->rank_lanes(RailPreference{})) EXPECT_TRUE(r.carries);

  constexpr size_t kSize = size_t{4} << 20;
  std::vector<uint8_t> src(kSize, 7), dst(kSize, 0);
  auto smh = MemHandle::map(*c0, src.data(), kSize);
  auto dmh = MemHandle::map(*c1, dst.data(), kSize);
  ASSERT_TRUE(smh.ok() && dmh.ok());
  Result<std::vector<uint8_t>> packed = (*dmh)->rkey_pack();
  ASSERT_TRUE(packed.ok());
  Result<std::unique_ptr<Rkey>> rkey = (*ep)->rkey_unpack(*packed);
  ASSERT_TRUE(rkey.ok());
  auto put = [&](const RailPreference* rails) {
    RequestParams rp;
    rp.memh = smh->get();
    rp.rails = rails;
    Result<std::shared_ptr<Request>> r =
        (*ep)->put_nbx(src.data(), kSize, reinterpret_cast<uintptr_t>(dst.data()), **rkey, rp);
    ASSERT_TRUE(r.ok());
    while (!(*r)->completed()) (*w0)->progress(), (*w1)->progress();
    ASSERT_EQ((*r)->status(), Status::Ok);
  };
  auto bytes = [&](size_t lane) { return ucp::impl(**ep).lane_runtime()[lane].rma_bytes; };
  put(&affinity);
  EXPECT_EQ(bytes(same), kSize);
  EXPECT_EQ(bytes(cross), 0u);
  EXPECT_EQ(dst, src);
  RailPreference none;
  put(&none);
  EXPECT_GT(bytes(cross), 0u) << "without affinity both rails carry";
  rkey->reset();
  ep->reset();
}

}  // namespace
}  // namespace mc::ucp::test
