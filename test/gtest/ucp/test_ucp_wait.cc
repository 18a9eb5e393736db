// SPDX-License-Identifier: Apache-2.0
// Blocking progress and thread modes: a thread asleep in Worker::wait()
// wakes on an incoming active message (tcp by its event fd, sm by the poll
// interval) and on signal(); two threads put through one multi-mode worker;
// which workers are event-driven.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "ucp/api/ucp.h"
#include "uct/base/component_loader.h"

namespace mc::ucp::test {
namespace {

using ucs::Result;
using ucs::Status;

class UcpWait : public testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (!uct::find_component(GetParam())) GTEST_SKIP() << GetParam() << " is not available";
    // tcp wakes by its event fd alone: a poll interval of an hour would
    // leave a missed wake-up asleep until the test's own bound.
    auto sources = ucs::config::Sources::from({{"MC_TLS", GetParam()},
                                               {"MC_NET_DEVICES", "lo"},
                                               {"MC_POLL_INTERVAL", tcp() ? "1h" : "1ms"}},
                                              {});
    ASSERT_TRUE(sources.ok());
    sources_ = std::move(*sources);
    ContextParams params;
    params.sources = &sources_;
    auto ctx = Context::create(params);
    ASSERT_TRUE(ctx.ok());
    ctx_ = std::move(*ctx);
    WorkerParams multi;
    multi.thread_mode = ThreadMode::Multi;
    auto s = Worker::create(*ctx_, multi);
    auto r = Worker::create(*ctx_);
    ASSERT_TRUE(s.ok() && r.ok());
    sender_ = std::move(*s);
    receiver_ = std::move(*r);
    auto ep = sender_->ep_create(receiver_->address());
    ASSERT_TRUE(ep.ok());
    ep_ = std::move(*ep);
  }
  void TearDown() override {
    ep_.reset();
    sender_.reset();
    receiver_.reset();
  }
  bool tcp() const { return GetParam() == "tcp"; }

  ucs::config::Sources sources_;
  std::unique_ptr<Context> ctx_;
  std::unique_ptr<Worker> sender_, receiver_;
  std::unique_ptr<Endpoint> ep_;
};

TEST_P(UcpWait, ModesAndEventFd) {
  EXPECT_EQ(sender_->thread_mode(), ThreadMode::Multi);
  EXPECT_EQ(receiver_->thread_mode(), ThreadMode::Single);
  EXPECT_GE(receiver_->event_fd(), 0);
}

// tcp's ifaces all wake a sleeper through event_fd(); sm's must be polled.
TEST_P(UcpWait, EventDrivenOnlyWhenNoIfaceIsPolled) {
  EXPECT_EQ(receiver_->event_driven(), tcp());
  EXPECT_EQ(sender_->event_driven(), tcp());
}

TEST_P(UcpWait, SleepingThreadWakesOnAnActiveMessage) {
  std::atomic<bool> got{false};
  std::vector<uint8_t> received;
  receiver_->set_am_handler(4, [&](const void* data, size_t n) {
    const auto* p = static_cast<const uint8_t*>(data);
    received.assign(p, p + n);
    got = true;
  });
  std::atomic<int> timeouts{0};
  std::thread t([&] {
    // Bounded: a missed wake-up fails the test instead of hanging it.
    for (int i = 0; i < 60 && !got; ++i) {
      receiver_->progress();
      if (!got && receiver_->wait(std::chrono::seconds(1)) == Status::Timeout) ++timeouts;
    }
  });
  const std::vector<uint8_t> msg = {1, 2, 3, 4, 5, 6, 7};
  auto r = ep_->am_send_nbx(4, msg.data(), msg.size());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)->wait(), Status::Ok);
  t.join();
  EXPECT_TRUE(got);
  EXPECT_EQ(received, msg);
  if (tcp()) {
    EXPECT_EQ(timeouts, 0) << "the event fd did not wake the thread";
  }
}

// A worker progresses an iface without events for a long time only now and
// then; the progress() after a wait() that an event ended serves it at once.
TEST_P(UcpWait, OneProgressAfterAWakeServesAQuietIface) {
  size_t got = 0;
  receiver_->set_am_handler(6, [&](const void*, size_t) { ++got; });
  for (int i = 0; i < 10000; ++i) receiver_->progress();  // every iface quiet
  const uint8_t byte = 1;
  auto r = ep_->am_send_nbx(6, &byte, 1);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ((*r)->wait(), Status::Ok);
  for (int i = 0; i < 60 && got == 0; ++i) {
    (void)receiver_->wait(std::chrono::seconds(1));
    receiver_->progress();
    if (!tcp()) {  // sm is polled: what arrived may wait for the next round
      for (int k = 0; k < 3 && got == 0; ++k) receiver_->progress();
    }
  }
  EXPECT_EQ(got, 1u);
}

TEST_P(UcpWait, SignalWakesAWait) {
  if (!tcp()) GTEST_SKIP() << "sm is polled: its wait() returns after the poll interval anyway";
  receiver_->progress();
  EXPECT_EQ(receiver_->wait(std::chrono::milliseconds(20)), Status::Timeout);
  std::atomic<bool> woke{false};
  std::thread t([&] {
    const Status s = receiver_->wait();  // no timeout: only signal() ends it
    woke = s == Status::Ok;
  });
  receiver_->signal();
  t.join();
  EXPECT_TRUE(woke);
}

TEST_P(UcpWait, TwoThreadsPutThroughOneMultiModeWorker) {
  const size_t per_thread = size_t{4} << 20;
  std::vector<uint8_t> target(2 * per_thread, 0);
  auto tmh = MemHandle::map(*ctx_, target.data(), target.size());
  ASSERT_TRUE(tmh.ok());
  auto rkey = ep_->rkey_unpack(*(*tmh)->rkey_pack());
  ASSERT_TRUE(rkey.ok());
  const uint64_t base = reinterpret_cast<uintptr_t>(target.data());
  std::vector<uint8_t> src(2 * per_thread);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i * 7 + (i >> 9) + 1);
  std::atomic<int> failures{0};
  std::atomic<bool> done{false};
  auto worker = [&](size_t half) {
    // Many requests of mixed sizes, each waited on by this thread while the
    // other thread posts and progresses too.
    for (size_t off = 0; off < per_thread;) {
      const size_t n = std::min<size_t>(per_thread - off, 1000 + (off % 70000));
      const size_t at = half * per_thread + off;
      auto r = ep_->put_nbx(src.data() + at, n, base + at, **rkey);
      if (!r.ok() || (*r)->wait() != Status::Ok) ++failures;
      off += n;
    }
    auto f = ep_->flush();
    if (!f.ok() || (*f)->wait() != Status::Ok) ++failures;
  };
  std::thread a(worker, 0), b(worker, 1);
  std::thread progress([&] {
    while (!done) receiver_->progress();
  });
  a.join();
  b.join();
  done = true;
  progress.join();
  EXPECT_EQ(failures, 0);
  EXPECT_TRUE(target == src);
}

INSTANTIATE_TEST_SUITE_P(Ucp, UcpWait, testing::Values("tcp", "sm"));

// Every tcp device, sockets served in progress(): the worker's tcp ifaces
// share one event loop, whose fd the second one finds watched already
// (EEXIST). That is no iface to poll.
TEST(UcpWaitShared, TcpIfacesSharingALoopAreEventDriven) {
  if (!uct::find_component("tcp")) GTEST_SKIP() << "tcp is not available";
  auto sources = ucs::config::Sources::from({{"MC_TLS", "tcp"}}, {});
  ASSERT_TRUE(sources.ok());
  ContextParams params;
  params.sources = &*sources;
  auto ctx = Context::create(params);
  ASSERT_TRUE(ctx.ok());
  size_t tcp_ifaces = 0;
  for (const ResourceInfo& r : (*ctx)->resources()) tcp_ifaces += r.enabled ? 1 : 0;
  if (tcp_ifaces < 2) GTEST_SKIP() << "one tcp device here: nothing shares the loop";
  WorkerParams progress;
  progress.async_mode = AsyncMode::Progress;  // the loop is the worker's, driven by progress()
  auto worker = Worker::create(**ctx, progress);
  ASSERT_TRUE(worker.ok());
  EXPECT_TRUE((*worker)->event_driven()) << tcp_ifaces << " tcp ifaces";
}

}  // namespace
}  // namespace mc::ucp::test
