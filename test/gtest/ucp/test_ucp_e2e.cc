// SPDX-License-Identifier: Apache-2.0
// UCP end to end in one process: put, get and active messages at every size
// class of the protocol tables, with data checked, over self (one worker
// talking to itself), tcp and sm (two workers), and tcp+sm together (two
// rails); flush, close, and a request deadline giving Timeout. Variants:
// +progress runs the workers' sockets in progress() (AsyncMode::Progress),
// +alloc takes the target memory from MemHandle::alloc.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <numeric>
#include <sstream>

#include "ucp/api/ucp.h"
#include "ucp/core/endpoint.h"
#include "ucp/core/worker.h"
#include "ucp/proto/request_op.h"
#include "ucp/ucp_test_util.h"
#include "uct/base/component_loader.h"

namespace mc::ucp::test {
namespace {

using ucs::Result;
using ucs::Status;

bool have_tl(const std::string& tl) {
  return uct::find_component(tl) != nullptr;
}

// One or two workers of one context, an endpoint from the first to the last.
class UcpE2e : public testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    // "tls" or "tls+variant": +bcopy forces bcopy everywhere (fragmented
    // active messages and puts), +rails adds a second eager rail, +rndv
    // sends active messages from 100000 bytes by rendezvous, +progress and
    // +alloc as the file comment says.
    const std::string param = GetParam();
    const std::string tls = param.substr(0, param.find('+'));
    const std::string variant =
        param.find('+') == std::string::npos ? "" : param.substr(param.find('+') + 1);
    for (const std::string& tl : ucs::config::split_list(tls)) {
      if (!have_tl(tl)) GTEST_SKIP() << tl << " transport is not available";
    }
    env_ = {{"MC_TLS", tls}, {"MC_NET_DEVICES", "lo"}, {"MC_TRANSFER_TIMEOUT", "30s"}};
    if (variant == "bcopy") {
      env_["MC_BCOPY_THRESH"] = "0";
      env_["MC_ZCOPY_THRESH"] = "inf";
    } else if (variant == "rndv") {
      env_["MC_RNDV_THRESH"] = "100000";
    } else if (variant == "rails") {
      env_["MC_MAX_EAGER_RAILS"] = "2";
      env_["MC_SLICE_SIZE"] = "256k";
    }
    Result<ucs::config::Sources> sources = ucs::config::Sources::from(env_, {});
    ASSERT_TRUE(sources.ok());
    sources_ = std::move(*sources);
    ContextParams params;
    params.sources = &sources_;
    Result<std::unique_ptr<Context>> ctx = Context::create(params);
    ASSERT_TRUE(ctx.ok());
    ctx_ = std::move(*ctx);
    alloc_ = variant == "alloc";
    WorkerParams wp;
    wp.async_mode = variant == "progress" ? AsyncMode::Progress : AsyncMode::Thread;
    for (int i = 0; i < (tls == "self" ? 1 : 2); ++i) {
      Result<std::unique_ptr<Worker>> w = Worker::create(*ctx_, wp);
      ASSERT_TRUE(w.ok()) << ucs::status_string(w.status());
      workers_.push_back(std::move(*w));
    }
    Result<std::unique_ptr<Endpoint>> ep = sender().ep_create(receiver().address());
    ASSERT_TRUE(ep.ok()) << ucs::status_string(ep.status());
    ep_ = std::move(*ep);
  }

  void TearDown() override {
    ep_.reset();
    workers_.clear();
    ctx_.reset();
  }

  Worker& sender() { return *workers_.front(); }
  Worker& receiver() { return *workers_.back(); }

  // Progresses every worker until `r` completes; returns its status.
  Status wait(const std::shared_ptr<Request>& r) {
    while (!r->completed()) {
      for (auto& w : workers_) w->progress();
    }
    return r->status();
  }

  Status wait(Result<std::shared_ptr<Request>> r) {
    if (!r.ok()) return r.status();
    return wait(*r);
  }

  // Sizes worth moving: each range's edges of every table, and a few more.
  std::vector<size_t> sizes(proto::Op op) const {
    std::vector<size_t> out = {0, 1, 7, 8, 100, 4096, 65536, 65536 * 3 + 1000, size_t{4} << 20};
    for (bool reg : {false, true}) {
      for (const proto::ProtoRange& r : ucp::impl(*ep_).protocols().table(op, reg).ranges()) {
        if (r.min > (size_t{8} << 20)) continue;
        out.push_back(r.min);
        if (r.min > 0) out.push_back(r.min - 1);
        if (r.max < (size_t{8} << 20)) out.push_back(r.max);
      }
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
  }

  // A test's target: `len` zeroed bytes of the variant's memory (alloc:
  // MemHandle::alloc, else a mapped heap buffer) and its rkey here.
  struct Target {
    std::vector<uint8_t> storage;
    std::unique_ptr<MemHandle> memh;
    std::unique_ptr<Rkey> rkey;
    uint8_t* data() const { return static_cast<uint8_t*>(memh->address()); }
    uint64_t base() const { return reinterpret_cast<uintptr_t>(data()); }
  };
  // A zeroed target of `len` bytes: from MemHandle::alloc in the +alloc
  // variants unless `heap`, else a heap buffer of exactly `len` bytes.
  void make_target(size_t len, Target* t, bool heap = false) {
    Result<std::unique_ptr<MemHandle>> memh = Status::NoMemory;
    if (alloc_ && !heap) {
      memh = MemHandle::alloc(*ctx_, len);
    } else {
      t->storage.assign(len, 0);
      memh = MemHandle::map(*ctx_, t->storage.data(), len);
    }
    ASSERT_TRUE(memh.ok()) << ucs::status_string(memh.status());
    t->memh = std::move(*memh);
    std::memset(t->data(), 0, len);
    Result<std::vector<uint8_t>> packed = t->memh->rkey_pack();
    ASSERT_TRUE(packed.ok());
    Result<std::unique_ptr<Rkey>> rkey = ep_->rkey_unpack(*packed);
    ASSERT_TRUE(rkey.ok());
    t->rkey = std::move(*rkey);
  }

  std::map<std::string, std::string> env_;
  ucs::config::Sources sources_;
  std::unique_ptr<Context> ctx_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::unique_ptr<Endpoint> ep_;
  bool alloc_ = false;
};

TEST_P(UcpE2e, PutAndGetEverySizeClass) {
  const size_t max = size_t{8} << 20;
  Target t;
  ASSERT_NO_FATAL_FAILURE(make_target(max, &t));
  const uint8_t* target = t.data();
  const Rkey* rkey = t.rkey.get();
  const uint64_t base = t.base();
  for (size_t n : sizes(proto::Op::Put)) {
    for (bool registered : {false, true}) {
      SCOPED_TRACE("size " + std::to_string(n) + (registered ? " registered" : ""));
      std::vector<uint8_t> src = filled(n, n + registered);
      std::unique_ptr<MemHandle> smh;
      RequestParams params;
      if (registered && n > 0) {
        smh = std::move(*MemHandle::map(*ctx_, src.data(), n));
        params.memh = smh.get();
      }
      ASSERT_EQ(wait(ep_->put_nbx(src.data(), n, base, *rkey, params)), Status::Ok);
      ASSERT_EQ(wait(ep_->flush()), Status::Ok);
      ASSERT_TRUE(std::equal(src.begin(), src.end(), target));
      std::vector<uint8_t> back(n, 0xee);
      std::unique_ptr<MemHandle> bmh;
      if (registered && n > 0) {
        bmh = std::move(*MemHandle::map(*ctx_, back.data(), n));
        params.memh = bmh.get();
      }
      ASSERT_EQ(wait(ep_->get_nbx(back.data(), n, base, *rkey, params)), Status::Ok);
      ASSERT_EQ(back, src);
    }
  }
}

TEST_P(UcpE2e, ActiveMessagesEverySizeClass) {
  std::vector<std::vector<uint8_t>> received;
  receiver().set_am_handler(5, [&](const void* data, size_t length) {
    const auto* p = static_cast<const uint8_t*>(data);
    received.emplace_back(p, p + length);
  });
  for (size_t n : sizes(proto::Op::Am)) {
    SCOPED_TRACE("size " + std::to_string(n));
    received.clear();
    const std::vector<uint8_t> msg = filled(n, n + 3);
    bool called = false;
    RequestParams params;
    params.callback = [&called](Status s) { called = s == Status::Ok; };
    ASSERT_EQ(wait(ep_->am_send_nbx(5, msg.data(), n, params)), Status::Ok);
    EXPECT_TRUE(called);
    spin_until([&] { return !received.empty(); },
               [&] {
                 for (auto& w : workers_) w->progress();
               });
    ASSERT_EQ(received.size(), 1u);
    ASSERT_EQ(received[0], msg);
  }
}

// Bursts of small messages that the sender does not progress: those sent
// at once (am_short from the call) and those the lane had no room for
// (requests that wait) arrive in the order they were sent, every one, and
// every request completes. Between the bursts the receiver drains the lane,
// so the second burst finds room while sends of the first still wait.
TEST_P(UcpE2e, ShortActiveMessagesKeepTheirOrderWhenTheLaneFills) {
  constexpr uint32_t kCount = 5000;
  std::vector<uint32_t> received;
  receiver().set_am_handler(6, [&](const void* data, size_t length) {
    uint32_t v = UINT32_MAX;
    if (length == sizeof(v)) std::memcpy(&v, data, sizeof(v));
    received.push_back(v);
  });
  std::vector<uint32_t> values(kCount);  // a waiting send reads its buffer later
  std::iota(values.begin(), values.end(), 0u);
  std::vector<std::shared_ptr<Request>> reqs;
  size_t waiting = 0;
  for (uint32_t i = 0; i < kCount; ++i) {
    if (i == kCount / 2 && workers_.size() > 1) {
      for (int k = 0; k < 1000; ++k) receiver().progress();
    }
    auto r = ep_->am_send_nbx(6, &values[i], sizeof(uint32_t));
    ASSERT_TRUE(r.ok()) << "message " << i << ": " << ucs::status_string(r.status());
    if (!(*r)->completed()) {
      ++waiting;
      reqs.push_back(*r);
    }
  }
  spin_until([&] { return received.size() >= kCount; },
             [&] {
               for (auto& w : workers_) w->progress();
             });
  ASSERT_EQ(received.size(), kCount) << waiting << " sends waited for room";
  for (uint32_t i = 0; i < kCount; ++i) ASSERT_EQ(received[i], i) << "at " << i;
  for (const auto& r : reqs) EXPECT_EQ(wait(r), Status::Ok);
}

TEST_P(UcpE2e, RkeyRangeIsChecked) {
  Target t;
  ASSERT_NO_FATAL_FAILURE(make_target(4096, &t, true));
  std::vector<uint8_t> src(8192);
  EXPECT_EQ(ep_->put_nbx(src.data(), src.size(), t.base(), *t.rkey).status(), Status::InvalidParam);
  std::vector<uint8_t> junk = {1, 2, 3};
  EXPECT_EQ(ep_->rkey_unpack(junk).status(), Status::InvalidParam);
}

// A put that the transport completes in the call (short, bcopy, or a
// zero-copy one into mapped memory) returns a completed request, its
// callback run once already; the request stays Ok whatever is done with it,
// and a flush still waits for every put, done in place or not.
TEST_P(UcpE2e, PutsDoneInPlaceAreCompletedAndFlushed) {
  constexpr size_t kSizes[] = {8, 4096, 65536};
  constexpr size_t kPuts = 8;
  const size_t len = kPuts * 65536;
  Target t;
  ASSERT_NO_FATAL_FAILURE(make_target(len, &t));
  uint8_t* target = t.data();
  const Rkey* rkey = t.rkey.get();
  const uint64_t base = t.base();
  for (size_t n : kSizes) {
    for (bool registered : {false, true}) {
      SCOPED_TRACE("size " + std::to_string(n) + (registered ? " registered" : ""));
      std::memset(target, 0, len);
      std::vector<uint8_t> src = filled(kPuts * n, n + registered);
      std::unique_ptr<MemHandle> smh;
      if (registered) smh = std::move(*MemHandle::map(*ctx_, src.data(), src.size()));
      std::vector<int> calls(kPuts, 0);
      std::vector<std::shared_ptr<Request>> reqs;
      // No progress between the puts: whatever did not complete in place
      // is still in flight when the flush starts.
      for (size_t i = 0; i < kPuts; ++i) {
        RequestParams params;
        params.memh = smh.get();
        params.callback = [&calls, i](Status st) {
          EXPECT_EQ(st, Status::Ok);
          ++calls[i];
        };
        auto r = ep_->put_nbx(src.data() + i * n, n, base + i * n, *rkey, params);
        ASSERT_TRUE(r.ok()) << ucs::status_string(r.status());
        ASSERT_TRUE(*r);
        if ((*r)->completed()) {
          EXPECT_EQ((*r)->status(), Status::Ok);
          EXPECT_EQ(calls[i], 1) << "completed, but its callback did not run once";
          (*r)->cancel();
          EXPECT_EQ((*r)->test(), Status::Ok);
          EXPECT_EQ((*r)->wait(), Status::Ok);
        }
        reqs.push_back(*r);
      }
      ASSERT_EQ(wait(ep_->flush()), Status::Ok);
      for (size_t i = 0; i < kPuts; ++i) {
        EXPECT_TRUE(reqs[i]->completed()) << "put " << i << " is not done after the flush";
        EXPECT_EQ(reqs[i]->status(), Status::Ok);
        EXPECT_EQ(calls[i], 1) << "put " << i;
      }
      ASSERT_TRUE(std::equal(src.begin(), src.end(), target));
      // Many more of the same bytes, never progressed: the flush after
      // them waits for every one.
      std::memset(target, 0, len);
      int done = 0;
      for (size_t i = 0; i < 1000; ++i) {
        RequestParams params;
        params.memh = smh.get();
        params.callback = [&done](Status st) { done += st == Status::Ok; };
        ASSERT_TRUE(ep_->put_nbx(src.data(), n, base, *rkey, params).ok());
      }
      ASSERT_EQ(wait(ep_->flush()), Status::Ok);
      EXPECT_EQ(done, 1000);
      ASSERT_TRUE(std::equal(src.begin(), src.begin() + static_cast<ptrdiff_t>(n), target));
    }
  }
}

// Small puts take the endpoint's short-put path, which skips the table
// lookup: around the edge of each host table's first range, registered or
// not, every put lands on the lane the table names for its size, and its
// bytes arrive.
TEST_P(UcpE2e, SmallPutsTakeTheLaneTheirTableNames) {
  const size_t len = 1 << 16;
  Target t;
  ASSERT_NO_FATAL_FAILURE(make_target(len, &t));
  std::vector<uint8_t> src = filled(len, 42);
  std::unique_ptr<MemHandle> smh = std::move(*MemHandle::map(*ctx_, src.data(), src.size()));
  for (bool registered : {false, true}) {
    const proto::ProtoTable& table = ucp::impl(*ep_).protocols().table(proto::Op::Put, registered);
    ASSERT_FALSE(table.ranges().empty());
    const size_t edge = std::min(table.ranges()[0].max, len - 1);
    for (size_t n : {size_t{1}, size_t{8}, edge - 1, edge, edge + 1}) {
      if (n == 0) continue;
      SCOPED_TRACE("size " + std::to_string(n) + (registered ? " registered" : ""));
      const proto::ProtoRange* range = table.lookup(n);
      ASSERT_NE(range, nullptr);
      const size_t lane = range->lanes[0];
      const uint64_t before = ucp::impl(*ep_).lane_runtime()[lane].rma_bytes;
      std::memset(t.data(), 0, n);
      RequestParams params;
      params.memh = registered ? smh.get() : nullptr;
      ASSERT_EQ(wait(ep_->put_nbx(src.data(), n, t.base(), *t.rkey, params)), Status::Ok);
      ASSERT_EQ(wait(ep_->flush()), Status::Ok);
      EXPECT_EQ(ucp::impl(*ep_).lane_runtime()[lane].rma_bytes - before, n)
          << "not on lane " << lane;
      ASSERT_TRUE(std::equal(src.begin(), src.begin() + static_cast<ptrdiff_t>(n), t.data()));
    }
  }
}

// Gets (and zero-copy puts) that one transport call moves are posted at
// once: done in the call (mapped sm memory, self) they return a completed
// request with its callback run; else (tcp, CMA) a request that completes
// with that call. Either way the data is there when the request completes.
TEST_P(UcpE2e, SingleSliceGetsAndPutsPostedAtOnce) {
  const size_t len = size_t{1} << 20;
  Target t;
  ASSERT_NO_FATAL_FAILURE(make_target(len, &t));
  uint8_t* target = t.data();
  const Rkey* rkey = t.rkey.get();
  const uint64_t base = t.base();
  for (size_t n : {size_t{1}, size_t{8}, size_t{777}, size_t{4096}, size_t{65536}, len}) {
    for (bool registered : {false, true}) {
      SCOPED_TRACE("size " + std::to_string(n) + (registered ? " registered" : ""));
      const std::vector<uint8_t> pattern = filled(n, n * 3 + registered);
      std::memcpy(target, pattern.data(), n);
      std::vector<uint8_t> back(n, 0xee);
      std::unique_ptr<MemHandle> bmh;
      if (registered) bmh = std::move(*MemHandle::map(*ctx_, back.data(), n));
      int calls = 0;
      RequestParams params;
      params.memh = bmh.get();
      params.callback = [&calls](Status st) {
        EXPECT_EQ(st, Status::Ok);
        ++calls;
      };
      auto r = ep_->get_nbx(back.data(), n, base, *rkey, params);
      ASSERT_TRUE(r.ok()) << ucs::status_string(r.status());
      if ((*r)->completed()) {
        EXPECT_EQ((*r)->status(), Status::Ok);
        EXPECT_EQ(calls, 1);
        EXPECT_EQ(back, pattern) << "completed before the data arrived";
      }
      ASSERT_EQ(wait(*r), Status::Ok);
      EXPECT_EQ(calls, 1);
      ASSERT_EQ(back, pattern);
      // And back again as a put, from the registered buffer.
      const std::vector<uint8_t> other = filled(n, n * 5 + registered);
      std::memcpy(back.data(), other.data(), n);
      ASSERT_EQ(wait(ep_->put_nbx(back.data(), n, base, *rkey, params)), Status::Ok);
      EXPECT_EQ(calls, 2);
      ASSERT_EQ(wait(ep_->flush()), Status::Ok);
      ASSERT_TRUE(std::equal(other.begin(), other.end(), target));
    }
  }
}

// Operations refused when they start say so, run no callback, and leave
// nothing for the flush.
TEST_P(UcpE2e, RefusedPutsRunNoCallback) {
  Target t;
  ASSERT_NO_FATAL_FAILURE(make_target(4096, &t, true));
  const std::vector<uint8_t>& target = t.storage;
  const Rkey* rkey = t.rkey.get();
  const uint64_t base = t.base();
  int calls = 0;
  RequestParams params;
  params.callback = [&calls](Status) { ++calls; };
  std::vector<uint8_t> src(16, 0x5a);
  EXPECT_EQ(ep_->put_nbx(src.data(), 8, base + 4092, *rkey, params).status(), Status::InvalidParam);
  EXPECT_EQ(ep_->put_nbx(src.data(), 8, base - 8, *rkey, params).status(), Status::InvalidParam);
  EXPECT_EQ(ep_->get_nbx(src.data(), 16, base + 4090, *rkey, params).status(),
            Status::InvalidParam);
  EXPECT_EQ(ep_->put_nbx(nullptr, 8, base, *rkey, params).status(), Status::InvalidParam);
  EXPECT_EQ(calls, 0);
  EXPECT_EQ(wait(ep_->flush()), Status::Ok);
  EXPECT_TRUE(std::all_of(target.begin(), target.end(), [](uint8_t b) { return b == 0; }));
  ASSERT_EQ(wait(ep_->close(CloseMode::Flush)), Status::Ok);
  EXPECT_EQ(ep_->put_nbx(src.data(), 8, base, *rkey, params).status(), Status::Canceled);
  EXPECT_EQ(ep_->get_nbx(src.data(), 8, base, *rkey, params).status(), Status::Canceled);
  EXPECT_EQ(calls, 0);
}

TEST_P(UcpE2e, WorkerFlushAndClose) {
  EXPECT_EQ(wait(sender().flush()), Status::Ok);
  EXPECT_EQ(wait(ep_->close(CloseMode::Flush)), Status::Ok);
  std::vector<uint8_t> msg(10);
  EXPECT_EQ(ep_->am_send_nbx(1, msg.data(), msg.size()).status(), Status::Canceled);
}

TEST_P(UcpE2e, LanesAndProtocolsArePrintable) {
  std::ostringstream os;
  ep_->print(os);
  EXPECT_NE(os.str().find("lane 0"), std::string::npos) << os.str();
  EXPECT_NE(os.str().find("put 0.."), std::string::npos) << os.str();
}

// A protocol that never completes: only the deadline ends it.
class NeverOp : public proto::RequestOp {
 public:
  Status progress() override { return aborted ? Status::Canceled : Status::InProgress; }
  void abort() override { aborted = true; }
  size_t in_flight() const override { return 0; }
  void orphan() override {}
  bool aborted = false;
};

TEST_P(UcpE2e, DeadlineGivesTimeout) {
  RequestParams params;
  params.timeout = std::chrono::milliseconds(50);
  Status seen = Status::Ok;
  params.callback = [&seen](Status s) { seen = s; };
  auto op = std::make_unique<NeverOp>();
  NeverOp* raw = op.get();
  std::shared_ptr<Request> r = ucp::impl(sender()).submit(std::move(op), params);
  EXPECT_EQ(r->status(), Status::InProgress);
  EXPECT_EQ(r->wait(), Status::Timeout);
  EXPECT_EQ(seen, Status::Timeout);
  EXPECT_TRUE(raw->aborted);
}

// An operation that gives its final status (InProgress: none, until
// aborted) while `inflight` transport operations of it are still out.
class OutstandingOp : public proto::RequestOp {
 public:
  explicit OutstandingOp(Status final) : final_(final) {}
  Status progress() override { return aborted_ ? Status::Canceled : final_; }
  void abort() override { aborted_ = true; }
  size_t in_flight() const override { return inflight; }
  void orphan() override { inflight = 0; }
  size_t inflight = 1;

 private:
  Status final_;
  bool aborted_ = false;
};

TEST_P(UcpE2e, ARequestCompletesOnceNothingItStartedIsInFlight) {
  for (Status final : {Status::Ok, Status::IoError}) {
    auto op = std::make_unique<OutstandingOp>(final);
    OutstandingOp* raw = op.get();
    std::shared_ptr<Request> r = ucp::impl(sender()).submit(std::move(op), RequestParams{});
    for (int i = 0; i < 10; ++i) sender().progress();
    EXPECT_FALSE(r->completed()) << ucs::status_string(final) << " before its transports";
    raw->inflight = 0;
    EXPECT_EQ(r->wait(), final);
    EXPECT_TRUE(r->settled());
  }
}

TEST_P(UcpE2e, ACancelledRequestSettlesOnceItsTransportsAreDone) {
  auto op = std::make_unique<OutstandingOp>(Status::InProgress);
  OutstandingOp* raw = op.get();
  std::shared_ptr<Request> r = ucp::impl(sender()).submit(std::move(op), RequestParams{});
  r->cancel();
  EXPECT_EQ(r->status(), Status::Canceled);
  sender().progress();
  EXPECT_FALSE(r->settled()) << "its transport operation is still out";
  raw->inflight = 0;
  EXPECT_TRUE(r->settled());
}

TEST_P(UcpE2e, CancelAndForceClose) {
  auto r =
      ucp::impl(sender()).submit(std::make_unique<NeverOp>(), RequestParams{}, &ucp::impl(*ep_));
  EXPECT_EQ(ep_->close(CloseMode::Force).status(), Status::Ok);
  EXPECT_EQ(r->status(), Status::Canceled);
}

INSTANTIATE_TEST_SUITE_P(Ucp, UcpE2e,
                         testing::Values("self", "tcp", "sm", "sm,tcp", "self+bcopy", "tcp+bcopy",
                                         "sm,tcp+rails", "self+rndv", "tcp+rndv", "sm+rndv",
                                         "tcp+progress", "sm,tcp+progress", "sm+alloc",
                                         "tcp+alloc"),
                         [](const testing::TestParamInfo<std::string>& info) {
                           std::string n = info.param;
                           std::replace(n.begin(), n.end(), ',', '_');
                           std::replace(n.begin(), n.end(), '+', '_');
                           return n;
                         });

TEST(UcpWorker, GarbageAddressIsInvalidParam) {
  Result<ucs::config::Sources> sources = ucs::config::Sources::from({{"MC_TLS", "self"}}, {});
  ASSERT_TRUE(sources.ok());
  ContextParams params;
  params.sources = &*sources;
  auto ctx = Context::create(params);
  ASSERT_TRUE(ctx.ok());
  auto worker = Worker::create(**ctx);
  ASSERT_TRUE(worker.ok());
  std::vector<uint8_t> junk(64, 0x5a);
  EXPECT_EQ((*worker)->ep_create(junk).status(), Status::InvalidParam);
  std::vector<uint8_t> address = (*worker)->address();
  address[4] = 99;  // a future version
  EXPECT_EQ((*worker)->ep_create(address).status(), Status::InvalidParam);
}

TEST(UcpWorker, UnreachablePeerIsReported) {
  // self reaches only its own worker: a second worker is unreachable.
  Result<ucs::config::Sources> sources = ucs::config::Sources::from({{"MC_TLS", "self"}}, {});
  ASSERT_TRUE(sources.ok());
  ContextParams params;
  params.sources = &*sources;
  auto ctx = Context::create(params);
  ASSERT_TRUE(ctx.ok());
  auto a = Worker::create(**ctx);
  auto b = Worker::create(**ctx);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ((*a)->ep_create((*b)->address()).status(), Status::Unreachable);
}

}  // namespace
}  // namespace mc::ucp::test

namespace mc::ucp::test {
namespace {

// The /proc/self/maps line of the mapping holding `p`.
std::string mapping_of(const void* p) {
  std::ifstream maps("/proc/self/maps");
  const auto a = reinterpret_cast<uintptr_t>(p);
  for (std::string line; std::getline(maps, line);) {
    uintptr_t lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx", &lo, &hi) == 2 && a >= lo && a < hi) return line;
  }
  return "";
}

TEST(UcpMemAlloc, SmAllocatesSharedMemoryOthersPageAlignedHeap) {
  ucs::config::Sources sources;
  std::unique_ptr<Context> sm = make_context({{"MC_TLS", "sm"}}, &sources);
  ASSERT_NE(sm, nullptr);
  Result<std::unique_ptr<MemHandle>> h = MemHandle::alloc(*sm, 100000);
  ASSERT_TRUE(h.ok()) << ucs::status_string(h.status());
  EXPECT_EQ((*h)->length(), 100000u);
  // sm's shared memory: a file of /dev/shm the peer maps, not anonymous memory.
  EXPECT_NE(mapping_of((*h)->address()).find("/dev/shm/"), std::string::npos)
      << mapping_of((*h)->address());
  EXPECT_TRUE((*h)->rkey_pack().ok());

  ucs::config::Sources tcp_sources;
  std::unique_ptr<Context> tcp = make_context({{"MC_TLS", "tcp"}}, &tcp_sources);
  ASSERT_NE(tcp, nullptr);
  Result<std::unique_ptr<MemHandle>> heap = MemHandle::alloc(*tcp, 5000);
  ASSERT_TRUE(heap.ok()) << ucs::status_string(heap.status());
  EXPECT_EQ(reinterpret_cast<uintptr_t>((*heap)->address()) % 4096, 0u);
  EXPECT_EQ(mapping_of((*heap)->address()).find("/dev/shm/"), std::string::npos);
  std::memset((*heap)->address(), 0x5a, 5000);  // writable over its whole length (ASan checks)

  EXPECT_EQ(MemHandle::alloc(*tcp, 0).status(), Status::InvalidParam);
}

}  // namespace
}  // namespace mc::ucp::test
