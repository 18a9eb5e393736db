// SPDX-License-Identifier: Apache-2.0
// UCT failure paths common to every transport: a peer that dies mid-transfer
// gives every outstanding operation a terminal status and the endpoint an
// error, never a hang.
#include <atomic>

#include "uct/uct_test.h"

namespace mc::uct::test {
namespace {

class UctPeerFailure : public testing::TestWithParam<Resource> {};

TEST_P(UctPeerFailure, KilledPeerFailsOutstandingWorkWithoutHanging) {
  if (GetParam().tl.dev_type == DeviceType::Self) GTEST_SKIP() << "self has no peer process";
  constexpr size_t kSize = 4 << 20;
  ChildTarget child;
  ASSERT_TRUE(child.start(GetParam(), kSize));
  Endpoint* failed_ep = nullptr;
  int handler_calls = 0;
  Status handler_status = Status::Ok;
  std::unique_ptr<Entity> me = make_entity(GetParam(), [&](Endpoint* ep, Status s) {
    failed_ep = ep;
    handler_status = s;
    ++handler_calls;
  });
  ASSERT_TRUE(me);
  if (!(me->attr().cap & kCapErrHandlePeerFailure)) GTEST_SKIP() << "no peer failure handling";
  if (!(me->attr().cap & kCapPutZcopy)) GTEST_SKIP() << "no put_zcopy";
  Result<std::unique_ptr<Endpoint>> ep = me->connect(child.dev_addr, child.iface_addr);
  ASSERT_TRUE(ep.ok()) << ep.status();
  Result<std::unique_ptr<Rkey>> rkey = me->md().rkey_unpack(child.rkey);
  ASSERT_TRUE(rkey.ok());

  // One round trip proves the connection, then the peer dies while a stream
  // of puts is being posted.
  Buffer src(*me, kSize);
  src.fill(ChildTarget::kParentSeed);
  ASSERT_EQ(flush_and_wait(**ep, {me.get()}), Status::Ok);

  constexpr int kOps = 64;
  std::vector<TestCompletion> comps(kOps);
  int posted = 0, failed_at_post = 0;
  for (int i = 0; i < kOps; ++i) {
    if (i == 4) child.kill();
    Iov iov{src.data.data(), kSize, src.memh.get()};
    Status s = (*ep)->put_zcopy(&iov, 1, child.remote_address, **rkey, &comps[i].comp);
    for (int spin = 0; s == Status::NoResource && spin < 100000; ++spin) {
      me->iface().progress();
      s = (*ep)->put_zcopy(&iov, 1, child.remote_address, **rkey, &comps[i].comp);
    }
    if (s == Status::InProgress) {
      ++posted;
    } else {
      comps[i].fired = true;
      if (is_error(s)) ++failed_at_post;
    }
  }
  TestCompletion flush_comp;
  Status flush_status = (*ep)->flush(&flush_comp.comp);
  const bool settled = progress_until(
      [&] {
        bool all = true;
        for (auto& c : comps) all = all && c.done();
        return all && handler_calls > 0 &&
               (flush_status != Status::InProgress || flush_comp.done());
      },
      {me.get()}, std::chrono::seconds(60));
  ASSERT_TRUE(settled) << "outstanding work did not settle after the peer died (handler calls "
                       << handler_calls << ")";
  int errors = failed_at_post;
  for (auto& c : comps) errors += is_error(c.comp.status) ? 1 : 0;
  EXPECT_GT(errors + (is_error(flush_status) || is_error(flush_comp.comp.status) ? 1 : 0), 0)
      << "nothing reported the dead peer";
  EXPECT_EQ(handler_calls, 1);
  EXPECT_EQ(failed_ep, ep->get());
  EXPECT_TRUE(is_error(handler_status)) << handler_status;
}

INSTANTIATE_TEST_SUITE_P(Uct, UctPeerFailure, testing::ValuesIn(available_resources()),
                         resource_name);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(UctPeerFailure);

}  // namespace
}  // namespace mc::uct::test
