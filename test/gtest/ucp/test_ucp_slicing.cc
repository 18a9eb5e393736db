// SPDX-License-Identifier: Apache-2.0
// Slicing arithmetic and the slice executor with a fake issuer: tail merge,
// proportional split, bounded in-flight, retry on another lane, failure
// only when no lane is left.
#include <gtest/gtest.h>

#include <deque>
#include <map>

#include "ucp/proto/slice_executor.h"
#include "ucp/proto/slicing.h"

namespace mc::ucp::test {
namespace {

using namespace proto;
using ucs::Status;

TEST(UcpSlicing, TailMerge) {
  // 64 KiB slices, ratio 4: a tail under 16 KiB merges.
  std::vector<Slice> s = cut_slices(3 * 65536 + 1000, 65536, 4);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[2].offset, 2u * 65536);
  EXPECT_EQ(s[2].length, 65536u + 1000);
  s = cut_slices(3 * 65536 + 16384, 65536, 4);  // exactly 1/4: its own slice
  ASSERT_EQ(s.size(), 4u);
  EXPECT_EQ(s[3].length, 16384u);
  s = cut_slices(1000, 65536, 4);  // a single short slice stays
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].length, 1000u);
  EXPECT_TRUE(cut_slices(0, 65536, 4).empty());
  s = cut_slices(4 * 65536, 65536, 4);
  ASSERT_EQ(s.size(), 4u);
  size_t total = 0;
  for (const Slice& x : s) total += x.length;
  EXPECT_EQ(total, 4u * 65536);
}

TEST(UcpSlicing, ProportionalSplit) {
  std::vector<Slice> s = cut_slices(8 * 65536, 65536, 4);
  assign_lanes(&s, {1e9, 1e9});
  size_t per_lane[2] = {0, 0};
  for (const Slice& x : s) ++per_lane[x.lane];
  EXPECT_EQ(per_lane[0], 4u);
  EXPECT_EQ(per_lane[1], 4u);

  s = cut_slices(8 * 65536, 65536, 4);
  assign_lanes(&s, {3e9, 1e9});
  per_lane[0] = per_lane[1] = 0;
  for (const Slice& x : s) ++per_lane[x.lane];
  EXPECT_EQ(per_lane[0], 6u);
  EXPECT_EQ(per_lane[1], 2u);
}

// Completes nothing by itself: the test decides each posted slice's fate.
class FakeIssuer : public SliceIssuer {
 public:
  Status issue(size_t lane, const Slice& slice, uct::Completion* comp) override {
    if (fail_posts.count(lane)) return Status::IoError;
    if (busy.count(lane)) return Status::NoResource;
    posted.push_back({lane, slice.offset, comp});
    ++posts[lane];
    return Status::InProgress;
  }
  Status lane_status(size_t lane) const override {
    return dead.count(lane) ? Status::ConnectionReset : Status::Ok;
  }
  void complete_all(Status s) {
    std::deque<Posted> now;
    now.swap(posted);
    for (Posted& p : now) uct::completion_update(p.comp, s);
  }

  struct Posted {
    size_t lane;
    size_t offset;
    uct::Completion* comp;
  };
  std::deque<Posted> posted;
  std::map<size_t, size_t> posts;
  std::map<size_t, bool> fail_posts, busy, dead;
};

TEST(UcpExecutor, BoundedInFlightPerLane) {
  FakeIssuer fake;
  std::vector<Slice> s = cut_slices(20 * 1024, 1024, 4);
  assign_lanes(&s, {1, 1});
  SliceExecutor ex(s, ExecutorParams{2, 3, 4}, &fake);
  EXPECT_EQ(ex.progress(), Status::InProgress);
  EXPECT_EQ(fake.posts[0], 4u);
  EXPECT_EQ(fake.posts[1], 4u);
  EXPECT_EQ(ex.in_flight(), 8u);
  for (int i = 0; i < 10 && ex.progress() == Status::InProgress; ++i) fake.complete_all(Status::Ok);
  EXPECT_EQ(ex.progress(), Status::Ok);
  EXPECT_EQ(ex.in_flight(), 0u);
}

TEST(UcpExecutor, FailedSliceIsReissuedOnAnotherLane) {
  FakeIssuer fake;
  std::vector<Slice> s = cut_slices(8 * 1024, 1024, 4);
  assign_lanes(&s, {1, 1});
  SliceExecutor ex(s, ExecutorParams{2, 3, 8}, &fake);
  EXPECT_EQ(ex.progress(), Status::InProgress);
  // Every slice posted on lane 1 fails; lane 0 completes everything.
  std::deque<FakeIssuer::Posted> now;
  now.swap(fake.posted);
  for (auto& p : now) uct::completion_update(p.comp, p.lane == 1 ? Status::IoError : Status::Ok);
  for (int i = 0; i < 10 && ex.progress() == Status::InProgress; ++i) fake.complete_all(Status::Ok);
  EXPECT_EQ(ex.progress(), Status::Ok);
  EXPECT_GE(ex.retries(), 4u);
  for (const Slice& x : ex.slices()) EXPECT_EQ(x.lane, 0u);
}

TEST(UcpExecutor, FirstErrorOnlyWhenNoLaneIsLeft) {
  FakeIssuer fake;
  std::vector<Slice> s = cut_slices(4 * 1024, 1024, 4);
  assign_lanes(&s, {1, 1});
  SliceExecutor ex(s, ExecutorParams{2, 9, 8}, &fake);
  EXPECT_EQ(ex.progress(), Status::InProgress);
  std::deque<FakeIssuer::Posted> now;
  now.swap(fake.posted);
  for (auto& p : now) {
    uct::completion_update(p.comp, p.lane == 0 ? Status::ConnectionReset : Status::IoError);
  }
  EXPECT_EQ(ex.progress(), Status::ConnectionReset);  // the first error seen
}

TEST(UcpExecutor, RetryCountIsBounded) {
  FakeIssuer fake;
  fake.fail_posts[0] = true;
  std::vector<Slice> s = {Slice{0, 1024, 0}};
  SliceExecutor ex(s, ExecutorParams{2, 0, 8}, &fake);  // no retry allowed
  EXPECT_EQ(ex.progress(), Status::IoError);
}

TEST(UcpExecutor, DeadLaneIsAvoidedAndNoResourceWaits) {
  FakeIssuer fake;
  fake.dead[1] = true;
  fake.busy[0] = true;
  std::vector<Slice> s = cut_slices(4 * 1024, 1024, 4);
  assign_lanes(&s, {1, 1});
  SliceExecutor ex(s, ExecutorParams{2, 3, 8}, &fake);
  EXPECT_EQ(ex.progress(), Status::InProgress);
  EXPECT_TRUE(fake.posted.empty());
  fake.busy.erase(0);
  EXPECT_EQ(ex.progress(), Status::InProgress);
  EXPECT_EQ(fake.posts[0], 4u);
  fake.complete_all(Status::Ok);
  EXPECT_EQ(ex.progress(), Status::Ok);
}

TEST(UcpExecutor, EmptyIsDoneAndAbortCancels) {
  FakeIssuer fake;
  SliceExecutor empty({}, ExecutorParams{1, 3, 8}, &fake);
  EXPECT_EQ(empty.progress(), Status::Ok);
  SliceExecutor ex({Slice{0, 10, 0}}, ExecutorParams{1, 3, 8}, &fake);
  EXPECT_EQ(ex.progress(), Status::InProgress);
  ex.abort();
  EXPECT_EQ(ex.progress(), Status::Canceled);
  fake.complete_all(Status::Ok);  // a late completion lands safely
  EXPECT_EQ(ex.in_flight(), 0u);
}

}  // namespace
}  // namespace mc::ucp::test
