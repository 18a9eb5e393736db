// SPDX-License-Identifier: Apache-2.0
// EventLoop: fd handlers over pipes, periodic and oneshot timers, post() from
// other threads, own-thread and caller-driven runs, removal while
// dispatching, and no fd or thread left behind.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "common/proc_counts.h"
#include "ucs/async/event_loop.h"

namespace mc::ucs {
namespace {

using namespace std::chrono_literals;

// Generous: a deadline only bounds a wait for something that must happen.
constexpr auto kDeadline = 10s;

// A non-blocking pipe, closed at scope exit.
struct Pipe {
  int rd = -1;
  int wr = -1;
  Pipe() {
    int fds[2];
    if (pipe2(fds, O_NONBLOCK | O_CLOEXEC) == 0) {
      rd = fds[0];
      wr = fds[1];
    }
  }
  ~Pipe() {
    if (rd >= 0) close(rd);
    if (wr >= 0) close(wr);
  }
  bool write_byte() const {
    const char c = 'x';
    return write(wr, &c, 1) == 1;
  }
  void drain() const {
    char buf[64];
    while (read(rd, buf, sizeof(buf)) > 0) {
    }
  }
};

// Waits on a flag set from the loop thread.
class Latch {
 public:
  void set() {
    std::lock_guard guard(lock_);
    done_ = true;
    cv_.notify_all();
  }
  bool wait() {
    std::unique_lock guard(lock_);
    return cv_.wait_for(guard, kDeadline, [this] { return done_; });
  }

 private:
  std::mutex lock_;
  std::condition_variable cv_;
  bool done_ = false;
};

class EventLoopTest : public testing::Test {
 protected:
  void SetUp() override {
    auto r = EventLoop::create();
    ASSERT_TRUE(r.ok()) << status_string(r.status());
    loop_ = std::move(r).value();
  }

  // Drives the loop from this thread until `done()` or the deadline.
  bool progress_until(const std::function<bool()>& done) {
    const auto end = std::chrono::steady_clock::now() + kDeadline;
    while (!done()) {
      if (std::chrono::steady_clock::now() > end) return false;
      auto r = loop_->progress(10ms);
      if (!r.ok()) {
        ADD_FAILURE() << "progress: " << status_string(r.status());
        return false;
      }
    }
    return true;
  }

  std::unique_ptr<EventLoop> loop_;
};

TEST_F(EventLoopTest, RejectsBadArguments) {
  Pipe p;
  EXPECT_EQ(loop_->add_fd(-1, EPOLLIN, [](int, uint32_t) {}), Status::InvalidParam);
  EXPECT_EQ(loop_->add_fd(p.rd, EPOLLIN, nullptr), Status::InvalidParam);
  EXPECT_EQ(loop_->add_timer(0ms, [] {}).status(), Status::InvalidParam);
  EXPECT_EQ(loop_->add_timer(-1ms, [] {}).status(), Status::InvalidParam);
  EXPECT_EQ(loop_->add_timer(1ms, nullptr).status(), Status::InvalidParam);
  EXPECT_EQ(loop_->post(nullptr), Status::InvalidParam);
  EXPECT_EQ(loop_->modify_fd(p.rd, EPOLLIN), Status::NoElem);
  EXPECT_EQ(loop_->remove_fd(p.rd), Status::NoElem);
  EXPECT_EQ(loop_->cancel_timer(12345), Status::NoElem);
  EXPECT_EQ(loop_->add_fd(1000000, EPOLLIN, [](int, uint32_t) {}), Status::IoError);

  ASSERT_EQ(loop_->add_fd(p.rd, EPOLLIN, [](int, uint32_t) {}), Status::Ok);
  EXPECT_EQ(loop_->add_fd(p.rd, EPOLLIN, [](int, uint32_t) {}), Status::Exists);
  EXPECT_EQ(loop_->remove_fd(p.rd), Status::Ok);
  EXPECT_EQ(loop_->remove_fd(p.rd), Status::NoElem);
}

TEST_F(EventLoopTest, IdleProgressRunsNothing) {
  auto r = loop_->progress(0ms);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, 0u);
}

TEST_F(EventLoopTest, FdReadableCallback) {
  Pipe p;
  int calls = 0;
  int seen_fd = -1;
  uint32_t seen_events = 0;
  ASSERT_EQ(loop_->add_fd(p.rd, EPOLLIN,
                          [&](int fd, uint32_t events) {
                            ++calls;
                            seen_fd = fd;
                            seen_events = events;
                            p.drain();
                          }),
            Status::Ok);
  auto idle = loop_->progress(0ms);
  ASSERT_TRUE(idle.ok());
  EXPECT_EQ(*idle, 0u);
  EXPECT_EQ(calls, 0);

  ASSERT_TRUE(p.write_byte());
  ASSERT_TRUE(progress_until([&] { return calls == 1; }));
  EXPECT_EQ(seen_fd, p.rd);
  EXPECT_TRUE(seen_events & EPOLLIN);

  ASSERT_TRUE(p.write_byte());
  ASSERT_TRUE(progress_until([&] { return calls == 2; }));
  EXPECT_EQ(loop_->remove_fd(p.rd), Status::Ok);
  ASSERT_TRUE(p.write_byte());
  auto r = loop_->progress(20ms);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, 0u);
  EXPECT_EQ(calls, 2);
}

TEST_F(EventLoopTest, ModifyFdChangesEvents) {
  Pipe p;
  int out_calls = 0;
  // The write end of an empty pipe is writable, never readable.
  ASSERT_EQ(loop_->add_fd(p.wr, EPOLLIN,
                          [&](int, uint32_t events) {
                            if (events & EPOLLOUT) ++out_calls;
                          }),
            Status::Ok);
  auto r = loop_->progress(0ms);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, 0u);
  ASSERT_EQ(loop_->modify_fd(p.wr, EPOLLOUT), Status::Ok);
  ASSERT_TRUE(progress_until([&] { return out_calls > 0; }));
  ASSERT_EQ(loop_->modify_fd(p.wr, EPOLLIN), Status::Ok);
  const int before = out_calls;
  r = loop_->progress(0ms);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(out_calls, before);
  EXPECT_EQ(loop_->remove_fd(p.wr), Status::Ok);
}

TEST_F(EventLoopTest, TimerFiresRepeatedly) {
  int fired = 0;
  auto id = loop_->add_timer(1ms, [&] { ++fired; });
  ASSERT_TRUE(id.ok());
  EXPECT_NE(*id, 0u);
  ASSERT_TRUE(progress_until([&] { return fired >= 5; }));
  EXPECT_EQ(loop_->cancel_timer(*id), Status::Ok);
  EXPECT_EQ(loop_->cancel_timer(*id), Status::NoElem);
  const int after_cancel = fired;
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(loop_->progress(2ms).ok());
  EXPECT_EQ(fired, after_cancel);
}

TEST_F(EventLoopTest, OneshotTimerFiresOnce) {
  int fired = 0;
  auto count = [&] { ++fired; };
  auto id = loop_->add_timer(1ms, count, /*oneshot=*/true);
  ASSERT_TRUE(id.ok());
  ASSERT_TRUE(progress_until([&] { return fired == 1; }));
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(loop_->progress(2ms).ok());
  EXPECT_EQ(fired, 1);
  EXPECT_EQ(loop_->cancel_timer(*id), Status::NoElem);  // already fired
}

TEST_F(EventLoopTest, TimersFireInDeadlineOrder) {
  std::vector<int> order;
  auto push = [&order](int n) { return [&order, n] { order.push_back(n); }; };
  ASSERT_TRUE(loop_->add_timer(30ms, push(3), true).ok());
  ASSERT_TRUE(loop_->add_timer(10ms, push(1), true).ok());
  ASSERT_TRUE(loop_->add_timer(20ms, push(2), true).ok());
  ASSERT_TRUE(progress_until([&] { return order.size() == 3; }));
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3}));
}

TEST_F(EventLoopTest, CanceledTimerNeverFires) {
  int fired = 0;
  int other = 0;
  auto id = loop_->add_timer(1ms, [&] { ++fired; });
  ASSERT_TRUE(id.ok());
  ASSERT_EQ(loop_->cancel_timer(*id), Status::Ok);
  auto count_other = [&] { ++other; };
  ASSERT_TRUE(loop_->add_timer(5ms, count_other, true).ok());
  ASSERT_TRUE(progress_until([&] { return other == 1; }));
  EXPECT_EQ(fired, 0);
}

TEST_F(EventLoopTest, TimerCancelsItself) {
  int fired = 0;
  EventLoop::TimerId id = 0;
  auto r = loop_->add_timer(1ms, [&] {
    ++fired;
    EXPECT_EQ(loop_->cancel_timer(id), Status::Ok);
  });
  ASSERT_TRUE(r.ok());
  id = *r;
  ASSERT_TRUE(progress_until([&] { return fired == 1; }));
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(loop_->progress(2ms).ok());
  EXPECT_EQ(fired, 1);
}

TEST_F(EventLoopTest, TimerCancelsAnotherDueInTheSameRound) {
  // Both are due at the same progress(); whichever runs first cancels the
  // other, so exactly one callback runs.
  int fired = 0;
  EventLoop::TimerId a = 0, b = 0;
  auto ra = loop_->add_timer(1ms, [&] {
    ++fired;
    (void)loop_->cancel_timer(b);
    (void)loop_->cancel_timer(a);
  });
  auto rb = loop_->add_timer(1ms, [&] {
    ++fired;
    (void)loop_->cancel_timer(a);
    (void)loop_->cancel_timer(b);
  });
  ASSERT_TRUE(ra.ok());
  ASSERT_TRUE(rb.ok());
  a = *ra;
  b = *rb;
  std::this_thread::sleep_for(5ms);  // both due before the first progress
  ASSERT_TRUE(progress_until([&] { return fired >= 1; }));
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(loop_->progress(2ms).ok());
  EXPECT_EQ(fired, 1);
}

TEST_F(EventLoopTest, PostFromAnotherThread) {
  constexpr int kPosts = 200;
  std::vector<int> seen;
  std::thread poster([&] {
    for (int i = 0; i < kPosts; ++i) {
      EXPECT_EQ(loop_->post([&seen, i] { seen.push_back(i); }), Status::Ok);
    }
  });
  ASSERT_TRUE(progress_until([&] { return seen.size() == kPosts; }));
  poster.join();
  for (int i = 0; i < kPosts; ++i) ASSERT_EQ(seen[i], i);  // in posting order
}

TEST_F(EventLoopTest, ProgressCountsCallbacks) {
  int runs = 0;
  for (int i = 0; i < 3; ++i) ASSERT_EQ(loop_->post([&] { ++runs; }), Status::Ok);
  auto r = loop_->progress(1000ms);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, 3u);
  EXPECT_EQ(runs, 3);
}

TEST_F(EventLoopTest, PostedFunctionRepostingDoesNotStarve) {
  Pipe p;
  int fd_calls = 0;
  ASSERT_EQ(loop_->add_fd(p.rd, EPOLLIN,
                          [&](int, uint32_t) {
                            ++fd_calls;
                            p.drain();
                          }),
            Status::Ok);
  std::function<void()> again = [&] { (void)loop_->post(again); };
  ASSERT_EQ(loop_->post(again), Status::Ok);
  ASSERT_TRUE(p.write_byte());
  ASSERT_TRUE(progress_until([&] { return fd_calls == 1; }));
  EXPECT_EQ(loop_->remove_fd(p.rd), Status::Ok);
}

TEST_F(EventLoopTest, NestedProgressIsBusy) {
  Status nested = Status::Ok;
  ASSERT_EQ(loop_->post([&] { nested = loop_->progress(0ms).status(); }), Status::Ok);
  ASSERT_TRUE(loop_->progress(1000ms).ok());
  EXPECT_EQ(nested, Status::Busy);
}

TEST_F(EventLoopTest, RunsOnItsOwnThread) {
  EXPECT_FALSE(loop_->is_running());
  ASSERT_EQ(loop_->start(), Status::Ok);
  EXPECT_TRUE(loop_->is_running());
  EXPECT_EQ(loop_->start(), Status::Busy);
  EXPECT_EQ(loop_->progress(0ms).status(), Status::Busy);
  EXPECT_FALSE(loop_->in_loop_thread());

  Latch posted;
  std::thread::id ran_on;
  bool in_loop = false;
  ASSERT_EQ(loop_->post([&] {
    ran_on = std::this_thread::get_id();
    in_loop = loop_->in_loop_thread();
    posted.set();
  }),
            Status::Ok);
  ASSERT_TRUE(posted.wait());
  EXPECT_NE(ran_on, std::this_thread::get_id());
  EXPECT_TRUE(in_loop);

  Pipe p;
  Latch readable;
  ASSERT_EQ(loop_->add_fd(p.rd, EPOLLIN,
                          [&](int, uint32_t) {
                            p.drain();
                            readable.set();
                          }),
            Status::Ok);
  ASSERT_TRUE(p.write_byte());
  ASSERT_TRUE(readable.wait());
  EXPECT_EQ(loop_->remove_fd(p.rd), Status::Ok);

  Latch ticked;
  std::atomic<int> ticks{0};
  auto id = loop_->add_timer(1ms, [&] {
    if (++ticks == 3) ticked.set();
  });
  ASSERT_TRUE(id.ok());
  ASSERT_TRUE(ticked.wait());
  EXPECT_EQ(loop_->cancel_timer(*id), Status::Ok);
  const int after_cancel = ticks.load();
  std::this_thread::sleep_for(10ms);
  EXPECT_EQ(ticks.load(), after_cancel);  // cancel_timer() is synchronous

  EXPECT_EQ(loop_->stop(), Status::Ok);
  EXPECT_FALSE(loop_->is_running());
  EXPECT_EQ(loop_->stop(), Status::Ok);

  // Caller-driven again after the thread stopped, then a second start.
  int runs = 0;
  ASSERT_EQ(loop_->post([&] { ++runs; }), Status::Ok);
  ASSERT_TRUE(progress_until([&] { return runs == 1; }));
  ASSERT_EQ(loop_->start(), Status::Ok);
  EXPECT_EQ(loop_->stop(), Status::Ok);
}

TEST_F(EventLoopTest, StopFromInsideCallback) {
  ASSERT_EQ(loop_->start(), Status::Ok);
  Latch stopped;
  Status inside = Status::Ok;
  ASSERT_EQ(loop_->post([&] {
    inside = loop_->stop();
    stopped.set();
  }),
            Status::Ok);
  ASSERT_TRUE(stopped.wait());
  EXPECT_EQ(inside, Status::InProgress);
  const auto end = std::chrono::steady_clock::now() + kDeadline;
  while (loop_->is_running() && std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(1ms);
  }
  EXPECT_FALSE(loop_->is_running());
  EXPECT_EQ(loop_->start(), Status::Ok);  // joins the exited thread first
  EXPECT_EQ(loop_->stop(), Status::Ok);
}

TEST_F(EventLoopTest, CallbackRemovesItselfAndAnother) {
  // Both pipes are readable in the same round; whichever callback runs
  // first removes both handlers, so the other must not run, now or later.
  Pipe a, b;
  int calls = 0;
  auto cb = [&](int, uint32_t) {
    ++calls;
    EXPECT_EQ(loop_->remove_fd(a.rd), Status::Ok);
    EXPECT_EQ(loop_->remove_fd(b.rd), Status::Ok);
  };
  ASSERT_EQ(loop_->add_fd(a.rd, EPOLLIN, cb), Status::Ok);
  ASSERT_EQ(loop_->add_fd(b.rd, EPOLLIN, cb), Status::Ok);
  ASSERT_TRUE(a.write_byte());
  ASSERT_TRUE(b.write_byte());
  ASSERT_TRUE(progress_until([&] { return calls >= 1; }));
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(loop_->progress(1ms).ok());
  EXPECT_EQ(calls, 1);
}

TEST_F(EventLoopTest, CallbackReplacesItsOwnHandler) {
  // A callback that removes itself, closes the fd and registers a new one
  // (which may reuse the fd number) must leave the new handler working.
  auto first = std::make_unique<Pipe>();
  Pipe second;
  int old_calls = 0;
  int new_calls = 0;
  ASSERT_EQ(loop_->add_fd(first->rd, EPOLLIN,
                          [&](int fd, uint32_t) {
                            ++old_calls;
                            EXPECT_EQ(loop_->remove_fd(fd), Status::Ok);
                            first.reset();
                            EXPECT_EQ(loop_->add_fd(second.rd, EPOLLIN,
                                                    [&](int, uint32_t) {
                                                      ++new_calls;
                                                      second.drain();
                                                    }),
                                      Status::Ok);
                          }),
            Status::Ok);
  ASSERT_TRUE(first->write_byte());
  ASSERT_TRUE(progress_until([&] { return old_calls == 1; }));
  ASSERT_TRUE(second.write_byte());
  ASSERT_TRUE(progress_until([&] { return new_calls == 1; }));
  EXPECT_EQ(old_calls, 1);
  EXPECT_EQ(loop_->remove_fd(second.rd), Status::Ok);
}

TEST_F(EventLoopTest, RemoveFromAnotherThreadWaitsForCallback) {
  Pipe p;
  Latch entered;
  std::atomic<bool> finished{false};
  std::atomic<int> calls{0};
  ASSERT_EQ(loop_->add_fd(p.rd, EPOLLIN,
                          [&](int, uint32_t) {
                            ++calls;
                            entered.set();
                            std::this_thread::sleep_for(50ms);
                            finished = true;
                          }),
            Status::Ok);
  ASSERT_EQ(loop_->start(), Status::Ok);
  ASSERT_TRUE(p.write_byte());  // left unread: the fd stays readable
  ASSERT_TRUE(entered.wait());
  ASSERT_EQ(loop_->remove_fd(p.rd), Status::Ok);
  EXPECT_TRUE(finished.load());  // remove_fd() returned after the callback did
  const int after_remove = calls.load();
  std::this_thread::sleep_for(10ms);
  EXPECT_EQ(calls.load(), after_remove);
  EXPECT_EQ(loop_->stop(), Status::Ok);
}

TEST(EventLoop, LeavesNoFdOrThreadBehind) {
  const test::ProcCounts before = test::quiet_proc_counts();
  ASSERT_GT(before.fds, 0u);
  for (int round = 0; round < 3; ++round) {
    // The last round's thread, joined, may not be reaped yet.
    ASSERT_EQ(test::settled_proc_counts(before).threads, before.threads);
    auto r = EventLoop::create();
    ASSERT_TRUE(r.ok());
    auto& loop = *r;
    EXPECT_EQ(test::proc_counts().fds, before.fds + 3);  // epoll, eventfd, timerfd
    ASSERT_TRUE(loop->add_timer(1ms, [] {}).ok());
    ASSERT_EQ(loop->start(), Status::Ok);
    EXPECT_EQ(test::proc_counts().threads, before.threads + 1);
    Latch ran;
    ASSERT_EQ(loop->post([&] { ran.set(); }), Status::Ok);
    ASSERT_TRUE(ran.wait());
    // Rounds 1 and 2 leave stopping to the destructor.
    if (round == 0) {
      EXPECT_EQ(loop->stop(), Status::Ok);
    }
    ASSERT_EQ(loop->post([] {}), Status::Ok);  // discarded if still queued
  }
  const test::ProcCounts after = test::settled_proc_counts(before);
  EXPECT_EQ(after.fds, before.fds);
  EXPECT_EQ(after.threads, before.threads);
}

}  // namespace
}  // namespace mc::ucs
