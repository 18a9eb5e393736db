// SPDX-License-Identifier: Apache-2.0
// Rendezvous for large active messages: the request-to-send and
// acknowledgement codecs against garbage, the forced threshold's edges, and
// a sender whose request completes only once the receiver has got the
// payload and acknowledged it.
#include <gtest/gtest.h>

#include "ucp/api/ucp.h"
#include "ucp/core/endpoint.h"
#include "ucp/core/worker.h"
#include "ucp/proto/am_wire.h"
#include "ucp/proto/rndv.h"
#include "uct/base/component_loader.h"

namespace mc::ucp::test {
namespace {

using ucs::Result;
using ucs::Status;

RndvRts sample_rts() {
  RndvRts r;
  r.am_id = 9;
  r.sender_uuid = 0x1122334455667788ull;
  r.rndv_id = 42;
  r.length = 1 << 20;
  r.remote_addr = 0x7f0000001000ull;
  r.address = {1, 2, 3, 4, 5};
  r.rkey = {6, 7, 8};
  return r;
}

TEST(UcpRndvWire, RequestToSendRoundTrips) {
  const std::vector<uint8_t> bytes = rts_pack(sample_rts());
  EXPECT_EQ(bytes.size(), proto::kAmRtsHeader + 5 + 3);
  std::string why;
  Result<RndvRts> r = rts_unpack(bytes, &why);
  ASSERT_TRUE(r.ok()) << why;
  EXPECT_EQ(r->am_id, 9);
  EXPECT_EQ(r->sender_uuid, 0x1122334455667788ull);
  EXPECT_EQ(r->rndv_id, 42u);
  EXPECT_EQ(r->length, 1u << 20);
  EXPECT_EQ(r->remote_addr, 0x7f0000001000ull);
  EXPECT_EQ(r->address, sample_rts().address);
  EXPECT_EQ(r->rkey, sample_rts().rkey);
}

TEST(UcpRndvWire, GarbageRequestsToSendAreRejected) {
  const std::vector<uint8_t> good = rts_pack(sample_rts());
  std::string why;
  for (size_t n = 0; n < good.size(); ++n) {
    std::vector<uint8_t> cut(good.begin(), good.begin() + static_cast<long>(n));
    EXPECT_EQ(rts_unpack(cut, &why).status(), Status::InvalidParam) << n;
  }
  std::vector<uint8_t> longer = good;
  longer.push_back(0);
  EXPECT_EQ(rts_unpack(longer, &why).status(), Status::InvalidParam);
  EXPECT_NE(why.find("carries 9"), std::string::npos) << why;
  RndvRts huge = sample_rts();
  huge.length = proto::kAmMaxMessage + 1;
  EXPECT_EQ(rts_unpack(rts_pack(huge), &why).status(), Status::InvalidParam);
  huge.length = 0;
  EXPECT_EQ(rts_unpack(rts_pack(huge), &why).status(), Status::InvalidParam);
  std::vector<uint8_t> flags = good;
  flags[2] = 1;
  EXPECT_EQ(rts_unpack(flags, &why).status(), Status::InvalidParam);
  EXPECT_NE(why.find("flags"), std::string::npos) << why;
}

TEST(UcpRndvWire, Acknowledgements) {
  std::string why;
  auto ok = ats_unpack(ats_pack(7, Status::IoError), &why);
  ASSERT_TRUE(ok.ok()) << why;
  EXPECT_EQ(ok->first, 7u);
  EXPECT_EQ(ok->second, Status::IoError);
  std::vector<uint8_t> progress = ats_pack(7, Status::InProgress);
  EXPECT_EQ(ats_unpack(progress, &why).status(), Status::InvalidParam);
  std::vector<uint8_t> forged = ats_pack(7, Status::Ok);
  forged[8] = 0x00;
  forged[11] = 0x80;  // a large negative value no Status has
  EXPECT_EQ(ats_unpack(forged, &why).status(), Status::InvalidParam);
  forged.resize(15);
  EXPECT_EQ(ats_unpack(forged, &why).status(), Status::InvalidParam);
}

class UcpRndv : public testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (!uct::find_component(GetParam())) GTEST_SKIP() << GetParam() << " is not available";
    auto sources = ucs::config::Sources::from(
        {{"MC_TLS", GetParam()}, {"MC_NET_DEVICES", "lo"}, {"MC_RNDV_THRESH", "64k"}}, {});
    ASSERT_TRUE(sources.ok());
    sources_ = std::move(*sources);
    ContextParams params;
    params.sources = &sources_;
    auto ctx = Context::create(params);
    ASSERT_TRUE(ctx.ok());
    ctx_ = std::move(*ctx);
    for (int i = 0; i < (GetParam() == "self" ? 1 : 2); ++i) {
      auto w = Worker::create(*ctx_);
      ASSERT_TRUE(w.ok());
      workers_.push_back(std::move(*w));
    }
    auto ep = workers_.front()->ep_create(workers_.back()->address());
    ASSERT_TRUE(ep.ok());
    ep_ = std::move(*ep);
  }
  void TearDown() override {
    ep_.reset();
    workers_.clear();
  }

  ucs::config::Sources sources_;
  std::unique_ptr<Context> ctx_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::unique_ptr<Endpoint> ep_;
};

TEST_P(UcpRndv, ThresholdEdges) {
  const proto::ProtoTable& t = ucp::impl(*ep_).protocols().table(proto::Op::Am, false);
  ASSERT_NE(t.lookup(65535), nullptr);
  EXPECT_NE(t.lookup(65535)->kind, proto::ProtoKind::Rndv);
  ASSERT_NE(t.lookup(65536), nullptr);
  EXPECT_EQ(t.lookup(65536)->kind, proto::ProtoKind::Rndv);
}

TEST_P(UcpRndv, SenderCompletesOnlyOnTheAcknowledgement) {
  if (GetParam() == "self") GTEST_SKIP() << "one worker: sender and receiver progress together";
  Worker& sender = *workers_.front();
  Worker& receiver = *workers_.back();
  std::vector<std::vector<uint8_t>> got;
  receiver.set_am_handler(3, [&](const void* data, size_t n) {
    const auto* p = static_cast<const uint8_t*>(data);
    got.emplace_back(p, p + n);
  });
  std::vector<uint8_t> msg(size_t{3} << 20);
  for (size_t i = 0; i < msg.size(); ++i) msg[i] = static_cast<uint8_t>(i * 29 + (i >> 10));
  auto r = ep_->am_send_nbx(3, msg.data(), msg.size());
  ASSERT_TRUE(r.ok());
  // The receiver starts its get from its own progress: until then the
  // sender's buffer stays in use.
  for (int i = 0; i < 1000; ++i) sender.progress();
  EXPECT_FALSE((*r)->completed());
  EXPECT_TRUE(got.empty());
  while (!(*r)->completed()) {
    sender.progress();
    receiver.progress();
  }
  EXPECT_EQ((*r)->status(), Status::Ok);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_TRUE(got[0] == msg);
  // Just below the threshold: eager, complete without the receiver.
  std::vector<uint8_t> small(65535, 0x5a);
  auto e = ep_->am_send_nbx(3, small.data(), small.size());
  ASSERT_TRUE(e.ok());
  while (!(*e)->completed()) sender.progress();
  EXPECT_EQ((*e)->status(), Status::Ok);
}

TEST_P(UcpRndv, DeadlineWhenTheReceiverNeverAnswers) {
  if (GetParam() == "self") GTEST_SKIP() << "one worker: sender and receiver progress together";
  std::vector<uint8_t> msg(size_t{1} << 20, 1);
  RequestParams params;
  params.timeout = std::chrono::milliseconds(100);
  auto r = ep_->am_send_nbx(3, msg.data(), msg.size(), params);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)->wait(), Status::Timeout);
}

INSTANTIATE_TEST_SUITE_P(Ucp, UcpRndv, testing::Values("self", "tcp", "sm"));

}  // namespace
}  // namespace mc::ucp::test
