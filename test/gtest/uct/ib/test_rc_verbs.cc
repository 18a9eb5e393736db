// SPDX-License-Identifier: Apache-2.0
// White-box tests of the RC transports (rc_verbs, and rc_mlx5 on the soft
// provider's mlx5 mode) on the soft provider: a device that fails in the
// middle of work fails every outstanding operation and the endpoint (once,
// through the error handler, without a wait), and a new endpoint on a
// healthy device works again; endpoints on both devices move data; a put
// to a bad rkey fails and touches nothing. rc_mlx5 against rc_verbs: a
// lower overhead, and the shared knob tables registered once.
#include <gtest/gtest.h>
#include <poll.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "common/proc_counts.h"
#include "ucs/config/registry.h"
#include "uct/base/component_loader.h"
#include "uct/ib/soft/soft_fabric.h"
#include "uct/uct_test.h"

namespace mc::uct::test {
namespace {

class RcVerbs : public testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    use_soft_verbs_unless_told();
    const char* provider = std::getenv("MC_IB_PROVIDER");
    if (!provider || std::string(provider) != "soft") {
      GTEST_SKIP() << "needs the soft provider's fault switch (MC_IB_PROVIDER=soft)";
    }
    fabric_ = std::getenv("MC_IB_SOFT_FABRIC");
    for (const Resource& r : available_resources()) {
      if (r.tl.tl_name == GetParam()) base_ = r;
    }
    if (base_.component.empty()) GTEST_SKIP() << GetParam() << " is not loaded";
  }
  void TearDown() override {
    if (!fabric_.empty()) (void)ib::soft::set_device_failed(fabric_, 1, false);
  }
  Resource on(const char* dev) const {
    Resource r = base_;
    r.tl.dev_name = dev;
    return r;
  }

  std::string fabric_;
  Resource base_;
};

TEST_P(RcVerbs, DeviceFailureFailsOutstandingWorkAndTheEndpointOnce) {
  int handler_calls = 0;
  Endpoint* failed_ep = nullptr;
  Status failed_status = Status::Ok;
  std::unique_ptr<Entity> me = make_entity(on("mcsoft1:1"), [&](Endpoint* ep, Status s) {
    ++handler_calls;
    failed_ep = ep;
    failed_status = s;
  });
  std::unique_ptr<Entity> peer = make_entity(on("mcsoft1:1"));
  ASSERT_TRUE(me && peer);
  Result<std::unique_ptr<Endpoint>> ep = me->connect(*peer);
  ASSERT_TRUE(ep.ok());
  constexpr size_t kSize = 4096;
  Buffer src(*me, kSize), dst(*peer, kSize * 8);
  src.fill(3);
  dst.fill(4);
  std::unique_ptr<Rkey> rkey = *me->md().rkey_unpack(dst.packed_rkey(*peer));
  Iov iov{src.data.data(), kSize, src.memh.get()};
  // Connected and working first.
  TestCompletion first;
  Status s = (*ep)->put_zcopy(&iov, 1, dst.address(), *rkey, &first.comp);
  while (s == Status::NoResource) {
    me->iface().progress(), peer->iface().progress();
    s = (*ep)->put_zcopy(&iov, 1, dst.address(), *rkey, &first.comp);
  }
  ASSERT_EQ(wait_op(s, first, {me.get(), peer.get()}), Status::Ok);

  ASSERT_EQ(ib::soft::set_device_failed(fabric_, 1, true), Status::Ok);
  std::vector<TestCompletion> comps(4);
  int failed_at_post = 0;
  for (size_t i = 0; i < comps.size(); ++i) {
    const Status p =
        (*ep)->put_zcopy(&iov, 1, dst.address() + (i + 1) * kSize, *rkey, &comps[i].comp);
    if (p == Status::InProgress) continue;
    comps[i].fired = true;
    comps[i].comp.status = p;
    if (is_error(p)) ++failed_at_post;
  }
  TestCompletion flush_comp;
  const Status flush_status = (*ep)->flush(&flush_comp.comp);
  ASSERT_TRUE(progress_until(
      [&] {
        bool all = true;
        for (auto& c : comps) all = all && c.done();
        return all && handler_calls > 0 &&
               (flush_status != Status::InProgress || flush_comp.done());
      },
      {me.get(), peer.get()}));
  for (auto& c : comps) EXPECT_TRUE(is_error(c.comp.status)) << c.comp.status;
  EXPECT_TRUE(is_error(flush_status) || is_error(flush_comp.comp.status));
  EXPECT_EQ(handler_calls, 1);
  EXPECT_EQ(failed_ep, ep->get());
  EXPECT_EQ(failed_status, Status::ConnectionReset);
  // Only the first put landed.
  EXPECT_EQ(std::memcmp(dst.data.data(), src.data.data(), kSize), 0);
  for (size_t i = 1; i < 8; ++i) {
    EXPECT_NE(std::memcmp(dst.data.data() + i * kSize, src.data.data(), kSize), 0) << i;
  }
  // A failed endpoint refuses new work at once.
  EXPECT_TRUE(is_error((*ep)->put_short(src.data.data(), 8, dst.address(), *rkey)));
  ep->reset();

  // Healed, a new endpoint works again.
  ASSERT_EQ(ib::soft::set_device_failed(fabric_, 1, false), Status::Ok);
  Result<std::unique_ptr<Endpoint>> again = me->connect(*peer);
  ASSERT_TRUE(again.ok());
  TestCompletion c;
  s = (*again)->put_zcopy(&iov, 1, dst.address() + kSize, *rkey, &c.comp);
  while (s == Status::NoResource) {
    me->iface().progress(), peer->iface().progress();
    s = (*again)->put_zcopy(&iov, 1, dst.address() + kSize, *rkey, &c.comp);
  }
  ASSERT_EQ(wait_op(s, c, {me.get(), peer.get()}), Status::Ok);
  EXPECT_EQ(std::memcmp(dst.data.data() + kSize, src.data.data(), kSize), 0);
}

TEST_P(RcVerbs, RkeyCarriesOneKeyPerDevice) {
  std::unique_ptr<Entity> a0 = make_entity(on("mcsoft0:1"));
  std::unique_ptr<Entity> b1 = make_entity(on("mcsoft1:1"));
  std::unique_ptr<Entity> a1 = make_entity(on("mcsoft1:1"));
  ASSERT_TRUE(a0 && b1 && a1);
  // The rkey of a buffer registered once reaches it from either device.
  Buffer dst(*b1, 256);
  dst.fill(0);
  const std::vector<uint8_t> packed = dst.packed_rkey(*b1);
  Buffer src(*a1, 256);
  src.fill(8);
  Result<std::unique_ptr<Endpoint>> ep = a1->connect(*b1);
  ASSERT_TRUE(ep.ok());
  std::unique_ptr<Rkey> rkey = *a1->md().rkey_unpack(packed);
  Status s = (*ep)->put_short(src.data.data(), 64, dst.address(), *rkey);
  while (s == Status::NoResource) {
    a1->iface().progress(), b1->iface().progress();
    s = (*ep)->put_short(src.data.data(), 64, dst.address(), *rkey);
  }
  ASSERT_EQ(s, Status::Ok);
  ASSERT_EQ(flush_and_wait(**ep, {a1.get(), b1.get()}), Status::Ok);
  EXPECT_EQ(std::memcmp(dst.data.data(), src.data.data(), 64), 0);
  // mcsoft0 and mcsoft1 are different devices: different device addresses.
  EXPECT_NE(a0->device_address(), b1->device_address());
}

TEST_P(RcVerbs, PutToABadRkeyFailsTheEndpointAndTouchesNothing) {
  int handler_calls = 0;
  std::unique_ptr<Entity> me =
      make_entity(on("mcsoft0:1"), [&](Endpoint*, Status) { ++handler_calls; });
  std::unique_ptr<Entity> peer = make_entity(on("mcsoft0:1"));
  ASSERT_TRUE(me && peer);
  Result<std::unique_ptr<Endpoint>> ep = me->connect(*peer);
  ASSERT_TRUE(ep.ok());
  Buffer src(*me, 4096), dst(*peer, 4096), other(*peer, 4096);
  src.fill(5);
  dst.fill(6);
  other.fill(7);
  // The rkey of another registration: a valid key, not for this range.
  std::unique_ptr<Rkey> rkey = *me->md().rkey_unpack(other.packed_rkey(*peer));
  Iov iov{src.data.data(), 4096, src.memh.get()};
  TestCompletion c;
  Status s = (*ep)->put_zcopy(&iov, 1, dst.address(), *rkey, &c.comp);
  while (s == Status::NoResource) {
    me->iface().progress(), peer->iface().progress();
    s = (*ep)->put_zcopy(&iov, 1, dst.address(), *rkey, &c.comp);
  }
  EXPECT_EQ(wait_op(s, c, {me.get(), peer.get()}), Status::IoError);
  ASSERT_TRUE(progress_until([&] { return handler_calls > 0; }, {me.get(), peer.get()}));
  EXPECT_EQ(handler_calls, 1);
  EXPECT_EQ(dst.check(6), -1) << "the refused put wrote into the target";
  EXPECT_EQ(other.check(7), -1) << "the refused put wrote into the rkey's registration";
}

// An armed `peer` sleeps on its event fd; an active message from `me` wakes it.
void expect_event_fd_wakes(Entity* me, Entity* peer) {
  ASSERT_TRUE(peer->attr().cap & kCapEventFd);
  Result<int> fd = peer->iface().event_fd();
  ASSERT_TRUE(fd.ok());
  size_t got = 0;
  ASSERT_EQ(peer->iface().set_am_handler(3,
                                         [&](const void*, size_t length, unsigned) {
                                           got = length;
                                           return Status::Ok;
                                         }),
            Status::Ok);
  Result<std::unique_ptr<Endpoint>> ep = me->connect(*peer);
  ASSERT_TRUE(ep.ok());
  // Connected: a first message goes through.
  Status s = (*ep)->am_short(3, 1, nullptr, 0);
  while (s == Status::NoResource) {
    me->iface().progress(), peer->iface().progress();
    s = (*ep)->am_short(3, 1, nullptr, 0);
  }
  ASSERT_EQ(s, Status::Ok);
  ASSERT_TRUE(progress_until([&] { return got == 8; }, {me, peer}));
  got = 0;
  // The peer arms and sleeps; only the event fd can wake it.
  Status armed = peer->iface().arm();
  for (int i = 0; armed == Status::Busy && i < 1000; ++i) armed = peer->iface().arm();
  ASSERT_EQ(armed, Status::Ok);
  pollfd idle{*fd, POLLIN, 0};
  EXPECT_EQ(poll(&idle, 1, 50), 0) << "readable with nothing to do";
  const uint8_t payload[16] = {};
  ASSERT_EQ((*ep)->am_short(3, 2, payload, sizeof(payload)), Status::Ok);
  ASSERT_EQ(flush_and_wait(**ep, {me}), Status::Ok);
  pollfd p{*fd, POLLIN, 0};
  ASSERT_EQ(poll(&p, 1, 10000), 1) << "the event fd did not wake the armed iface";
  ASSERT_TRUE(progress_until([&] { return got == 8 + sizeof(payload); }, {peer}));
}

TEST_P(RcVerbs, EventFdWakesAnArmedIfaceForAnActiveMessage) {
  std::unique_ptr<Entity> me = make_entity(on("mcsoft0:1"));
  std::unique_ptr<Entity> peer = make_entity(on("mcsoft0:1"));
  ASSERT_TRUE(me && peer);
  expect_event_fd_wakes(me.get(), peer.get());
}

// MC_NUM_COMP_CHANNELS_PER_CTX: an iface opens that many completion
// channels (each an fd of the soft provider, as of libibverbs), its CQs
// spread over them, and the event fd still wakes it whichever channel the
// completion comes on.
TEST_P(RcVerbs, CompletionChannelsPerCtxAreOpenedAndAllWake) {
  auto fds_of_one_iface = [&](const char* channels) {
    setenv("MC_NUM_COMP_CHANNELS_PER_CTX", channels, 1);
    setenv("MC_NUM_CQ_PER_CTX", "3", 1);
    const size_t before = mc::test::proc_counts().fds;
    std::unique_ptr<Entity> e = make_entity(on("mcsoft0:1"));
    const size_t after = mc::test::proc_counts().fds;
    unsetenv("MC_NUM_COMP_CHANNELS_PER_CTX");
    unsetenv("MC_NUM_CQ_PER_CTX");
    EXPECT_TRUE(e);
    return after - before;
  };
  const size_t one = fds_of_one_iface("1");
  const size_t four = fds_of_one_iface("4");
  EXPECT_EQ(four, one + 3) << "three more completion channels";
  setenv("MC_NUM_COMP_CHANNELS_PER_CTX", "4", 1);
  setenv("MC_NUM_CQ_PER_CTX", "3", 1);
  std::unique_ptr<Entity> me = make_entity(on("mcsoft0:1"));
  std::unique_ptr<Entity> peer = make_entity(on("mcsoft0:1"));
  unsetenv("MC_NUM_COMP_CHANNELS_PER_CTX");
  unsetenv("MC_NUM_CQ_PER_CTX");
  ASSERT_TRUE(me && peer);
  expect_event_fd_wakes(me.get(), peer.get());
}

INSTANTIATE_TEST_SUITE_P(Rc, RcVerbs, testing::Values("rc_verbs", "rc_mlx5"),
                         [](const testing::TestParamInfo<std::string>& i) { return i.param; });

class RcMlx5 : public testing::Test {
 protected:
  void SetUp() override {
    for (const Resource& r : available_resources()) {
      if (r.tl.tl_name == "rc_verbs") verbs_ = r;
      if (r.tl.tl_name == "rc_mlx5") mlx5_ = r;
    }
    if (verbs_.component.empty() || mlx5_.component.empty()) {
      GTEST_SKIP() << "needs rc_verbs and rc_mlx5 on one device";
    }
  }
  Resource verbs_, mlx5_;
};

TEST_F(RcMlx5, OverheadIsLowerThanRcVerbsOnTheSameDevice) {
  ASSERT_EQ(verbs_.tl.dev_name, mlx5_.tl.dev_name);
  std::unique_ptr<Entity> v = make_entity(verbs_);
  std::unique_ptr<Entity> m = make_entity(mlx5_);
  ASSERT_TRUE(v && m);
  // UCP scores lanes by these: rc_mlx5 wins by its numbers, not its name.
  EXPECT_LT(m->attr().overhead, v->attr().overhead);
  EXPECT_LE(m->attr().latency.c, v->attr().latency.c);
  EXPECT_EQ(m->attr().bandwidth.shared, v->attr().bandwidth.shared);
  EXPECT_EQ(m->attr().cap, v->attr().cap);
}

TEST_F(RcMlx5, WithoutTheSoftProviderEachRcComponentSaysWhyItHasNoDevice) {
  // What mc_info -d prints for a component without a memory domain. This
  // machine may have a real RDMA device: then there is no reason to check.
  const std::string saved = std::getenv("MC_IB_PROVIDER");
  setenv("MC_IB_PROVIDER", "verbs", 1);
  for (const char* name : {"rc_verbs", "rc_mlx5"}) {
    Component* c = find_component(name);
    ASSERT_NE(c, nullptr) << name;
    if (c->md_names().empty()) {
      EXPECT_EQ(c->unavailable_reason().rfind("no ", 0), 0u) << c->unavailable_reason();
    }
  }
  setenv("MC_IB_PROVIDER", saved.c_str(), 1);
  Component* c = find_component("rc_mlx5");
  EXPECT_EQ(c->md_names(), std::vector<std::string>{"rc_mlx5"});
}

TEST_F(RcMlx5, SharedKnobTablesAreRegisteredOnce) {
  ucs::config::Registry& registry = ucs::config::Registry::instance();
  for (Component* c : load_components()) c->register_config(registry);
  for (Component* c : load_components()) c->register_config(registry);
  int ib = 0, rc = 0;
  for (const ucs::config::Table* t : registry.tables()) {
    ib += t->name() == "ib devices";
    rc += t->name() == "rc transport";
  }
  EXPECT_EQ(ib, 1);
  EXPECT_EQ(rc, 1);
}

}  // namespace
}  // namespace mc::uct::test
