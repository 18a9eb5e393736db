// SPDX-License-Identifier: Apache-2.0
// The C API (ucp/api/ucp_c.h) through its C functions only: put, get and
// active messages over self (one worker) and tcp and sm (two workers in
// this process), and the bad-input paths (null handles, garbage address).
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "ucp/api/ucp_c.h"
#include "ucp/ucp_test_util.h"

namespace {

std::vector<uint8_t> filled(size_t n, unsigned seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(seed * 31 + i * 7);
  return v;
}

struct AmInbox {
  std::vector<std::vector<uint8_t>> messages;
};

void on_am(void* arg, const void* data, size_t length) {
  const auto* p = static_cast<const uint8_t*>(data);
  static_cast<AmInbox*>(arg)->messages.emplace_back(p, p + length);
}

void on_done(mc_ucp_status_t status, void* user_data) {
  *static_cast<mc_ucp_status_t*>(user_data) = status;
}

class UcpCApi : public testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    const char* names[] = {"MC_TLS", "NET_DEVICES", "MC_TRANSFER_TIMEOUT"};
    const char* values[] = {GetParam().c_str(), "lo", "30s"};
    ASSERT_EQ(mc_ucp_context_create(names, values, 3, &ctx_), MC_UCP_OK);
    for (int i = 0; i < (GetParam() == "self" ? 1 : 2); ++i) {
      mc_ucp_worker_t* w = nullptr;
      const mc_ucp_status_t s = mc_ucp_worker_create(ctx_, &w);
      if (s == MC_UCP_ERR_NO_DEVICE) GTEST_SKIP() << GetParam() << " is not available";
      ASSERT_EQ(s, MC_UCP_OK) << mc_ucp_status_string(s);
      workers_.push_back(w);
    }
    void* address = nullptr;
    size_t length = 0;
    ASSERT_EQ(mc_ucp_worker_address(workers_.back(), &address, &length), MC_UCP_OK);
    ASSERT_GT(length, 0u);
    const mc_ucp_status_t s = mc_ucp_ep_create(workers_.front(), address, length, &ep_);
    mc_ucp_worker_address_release(address);
    ASSERT_EQ(s, MC_UCP_OK) << mc_ucp_status_string(s);
  }

  void TearDown() override {
    mc_ucp_ep_destroy(ep_);
    for (mc_ucp_worker_t* w : workers_) mc_ucp_worker_destroy(w);
    mc_ucp_context_destroy(ctx_);
  }

  void progress_all() {
    for (mc_ucp_worker_t* w : workers_) mc_ucp_worker_progress(w);
  }

  // Completes an operation's outcome: the immediate status, or the request's
  // final one after progressing every worker (the peer too).
  // `req_p` is read only after `started` was computed (argument order).
  mc_ucp_status_t complete(mc_ucp_status_t started, mc_ucp_request_t** req_p) {
    mc_ucp_request_t* req = *req_p;
    *req_p = nullptr;
    if (started != MC_UCP_INPROGRESS) {
      EXPECT_EQ(req, nullptr);
      return started;
    }
    mc_ucp_status_t s;
    while ((s = mc_ucp_request_test(req)) == MC_UCP_INPROGRESS) progress_all();
    mc_ucp_request_free(req);
    return s;
  }

  mc_ucp_status_t flush() {
    mc_ucp_request_t* req = nullptr;
    return complete(mc_ucp_ep_flush(ep_, nullptr, &req), &req);
  }

  mc_ucp_context_t* ctx_ = nullptr;
  std::vector<mc_ucp_worker_t*> workers_;
  mc_ucp_ep_t* ep_ = nullptr;
};

TEST_P(UcpCApi, PutGetAndActiveMessage) {
  for (size_t n : {size_t{8}, size_t{4096}, size_t{1} << 20}) {
    SCOPED_TRACE("size " + std::to_string(n));
    std::vector<uint8_t> target(n, 0);
    mc_ucp_mem_t* memh = nullptr;
    ASSERT_EQ(mc_ucp_mem_map(ctx_, target.data(), n, &memh), MC_UCP_OK);
    void* packed = nullptr;
    size_t packed_len = 0;
    ASSERT_EQ(mc_ucp_rkey_pack(memh, &packed, &packed_len), MC_UCP_OK);
    mc_ucp_rkey_t* rkey = nullptr;
    ASSERT_EQ(mc_ucp_ep_rkey_unpack(ep_, packed, packed_len, &rkey), MC_UCP_OK);
    mc_ucp_rkey_buffer_release(packed);
    const uint64_t base = reinterpret_cast<uintptr_t>(target.data());

    const std::vector<uint8_t> src = filled(n, static_cast<unsigned>(n));
    mc_ucp_status_t seen = MC_UCP_INPROGRESS;
    mc_ucp_request_param_t param;
    std::memset(&param, 0, sizeof(param));
    param.callback = on_done;
    param.user_data = &seen;
    mc_ucp_request_t* req = nullptr;
    ASSERT_EQ(complete(mc_ucp_put_nbx(ep_, src.data(), n, base, rkey, &param, &req), &req),
              MC_UCP_OK);
    EXPECT_EQ(seen, MC_UCP_OK);
    ASSERT_EQ(flush(), MC_UCP_OK);
    ASSERT_EQ(target, src);

    std::vector<uint8_t> back(n, 0xee);
    ASSERT_EQ(complete(mc_ucp_get_nbx(ep_, back.data(), n, base, rkey, nullptr, &req), &req),
              MC_UCP_OK);
    ASSERT_EQ(back, src);

    // A range past the registration is refused at once.
    std::vector<uint8_t> big(n + 1);
    EXPECT_EQ(mc_ucp_put_nbx(ep_, big.data(), big.size(), base, rkey, nullptr, &req),
              MC_UCP_ERR_INVALID_PARAM);
    EXPECT_EQ(req, nullptr);
    mc_ucp_rkey_destroy(rkey);
    mc_ucp_mem_unmap(memh);
  }

  AmInbox inbox;
  ASSERT_EQ(mc_ucp_worker_set_am_handler(workers_.back(), 7, on_am, &inbox), MC_UCP_OK);
  for (size_t n : {size_t{0}, size_t{100}, size_t{300000}}) {
    SCOPED_TRACE("am size " + std::to_string(n));
    inbox.messages.clear();
    const std::vector<uint8_t> msg = filled(n, 3);
    mc_ucp_request_t* req = nullptr;
    ASSERT_EQ(complete(mc_ucp_am_send_nbx(ep_, 7, msg.data(), n, nullptr, &req), &req), MC_UCP_OK);
    mc::ucp::test::spin_until([&] { return !inbox.messages.empty(); }, [&] { progress_all(); });
    ASSERT_EQ(inbox.messages.size(), 1u);
    EXPECT_EQ(inbox.messages[0], msg);
  }

  mc_ucp_request_t* req = nullptr;
  EXPECT_EQ(complete(mc_ucp_worker_flush(workers_.front(), nullptr, &req), &req), MC_UCP_OK);
  EXPECT_EQ(complete(mc_ucp_ep_close_nbx(ep_, MC_UCP_CLOSE_FLUSH, nullptr, &req), &req), MC_UCP_OK);
  const uint8_t byte = 1;
  EXPECT_EQ(mc_ucp_am_send_nbx(ep_, 7, &byte, 1, nullptr, &req), MC_UCP_ERR_CANCELED);
}

INSTANTIATE_TEST_SUITE_P(Ucp, UcpCApi, testing::Values("self", "tcp", "sm"),
                         [](const testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

TEST(UcpCApiErrors, NullHandlesAreInvalidParam) {
  mc_ucp_context_t* ctx = nullptr;
  mc_ucp_worker_t* worker = nullptr;
  mc_ucp_ep_t* ep = nullptr;
  mc_ucp_request_t* req = nullptr;
  mc_ucp_rkey_t* rkey = nullptr;
  mc_ucp_mem_t* memh = nullptr;
  void* buf = nullptr;
  size_t len = 0;
  uint8_t data[8] = {};
  EXPECT_EQ(mc_ucp_context_create(nullptr, nullptr, 0, nullptr), MC_UCP_ERR_INVALID_PARAM);
  EXPECT_EQ(mc_ucp_context_create(nullptr, nullptr, 1, &ctx), MC_UCP_ERR_INVALID_PARAM);
  EXPECT_EQ(mc_ucp_worker_create(nullptr, &worker), MC_UCP_ERR_INVALID_PARAM);
  EXPECT_EQ(worker, nullptr);
  EXPECT_EQ(mc_ucp_worker_address(nullptr, &buf, &len), MC_UCP_ERR_INVALID_PARAM);
  EXPECT_EQ(mc_ucp_worker_progress(nullptr), 0u);
  EXPECT_EQ(mc_ucp_worker_set_am_handler(nullptr, 1, on_am, nullptr), MC_UCP_ERR_INVALID_PARAM);
  EXPECT_EQ(mc_ucp_worker_flush(nullptr, nullptr, &req), MC_UCP_ERR_INVALID_PARAM);
  EXPECT_EQ(mc_ucp_ep_create(nullptr, data, sizeof(data), &ep), MC_UCP_ERR_INVALID_PARAM);
  EXPECT_EQ(mc_ucp_ep_flush(nullptr, nullptr, &req), MC_UCP_ERR_INVALID_PARAM);
  EXPECT_EQ(mc_ucp_ep_close_nbx(nullptr, MC_UCP_CLOSE_FORCE, nullptr, &req),
            MC_UCP_ERR_INVALID_PARAM);
  EXPECT_EQ(mc_ucp_mem_map(nullptr, data, sizeof(data), &memh), MC_UCP_ERR_INVALID_PARAM);
  EXPECT_EQ(mc_ucp_rkey_pack(nullptr, &buf, &len), MC_UCP_ERR_INVALID_PARAM);
  EXPECT_EQ(mc_ucp_ep_rkey_unpack(nullptr, data, sizeof(data), &rkey), MC_UCP_ERR_INVALID_PARAM);
  EXPECT_EQ(mc_ucp_put_nbx(nullptr, data, 8, 0, nullptr, nullptr, &req), MC_UCP_ERR_INVALID_PARAM);
  EXPECT_EQ(mc_ucp_get_nbx(nullptr, data, 8, 0, nullptr, nullptr, &req), MC_UCP_ERR_INVALID_PARAM);
  EXPECT_EQ(mc_ucp_am_send_nbx(nullptr, 1, data, 8, nullptr, &req), MC_UCP_ERR_INVALID_PARAM);
  EXPECT_EQ(req, nullptr);
  EXPECT_EQ(mc_ucp_request_test(nullptr), MC_UCP_ERR_INVALID_PARAM);
  EXPECT_EQ(mc_ucp_request_wait(nullptr), MC_UCP_ERR_INVALID_PARAM);
  // Null releases are no-ops.
  mc_ucp_request_cancel(nullptr);
  mc_ucp_request_free(nullptr);
  mc_ucp_rkey_destroy(nullptr);
  mc_ucp_mem_unmap(nullptr);
  mc_ucp_ep_destroy(nullptr);
  mc_ucp_worker_destroy(nullptr);
  mc_ucp_context_destroy(nullptr);
  mc_ucp_worker_address_release(nullptr);
  mc_ucp_rkey_buffer_release(nullptr);
}

TEST(UcpCApiErrors, GarbageInputIsAnError) {
  const char* names[] = {"MC_TLS"};
  const char* values[] = {"self"};
  mc_ucp_context_t* ctx = nullptr;
  ASSERT_EQ(mc_ucp_context_create(names, values, 1, &ctx), MC_UCP_OK);
  mc_ucp_worker_t* worker = nullptr;
  ASSERT_EQ(mc_ucp_worker_create(ctx, &worker), MC_UCP_OK);
  std::vector<uint8_t> junk(64, 0x5a);
  mc_ucp_ep_t* ep = nullptr;
  EXPECT_EQ(mc_ucp_ep_create(worker, junk.data(), junk.size(), &ep), MC_UCP_ERR_INVALID_PARAM);
  EXPECT_EQ(ep, nullptr);
  EXPECT_EQ(mc_ucp_ep_create(worker, junk.data(), 0, &ep), MC_UCP_ERR_INVALID_PARAM);

  void* address = nullptr;
  size_t length = 0;
  ASSERT_EQ(mc_ucp_worker_address(worker, &address, &length), MC_UCP_OK);
  ASSERT_EQ(mc_ucp_ep_create(worker, address, length, &ep), MC_UCP_OK);
  mc_ucp_worker_address_release(address);
  mc_ucp_rkey_t* rkey = nullptr;
  EXPECT_EQ(mc_ucp_ep_rkey_unpack(ep, junk.data(), 3, &rkey), MC_UCP_ERR_INVALID_PARAM);
  EXPECT_EQ(rkey, nullptr);
  mc_ucp_mem_t* memh = nullptr;
  EXPECT_EQ(mc_ucp_mem_map(ctx, nullptr, 0, &memh), MC_UCP_ERR_INVALID_PARAM);
  mc_ucp_ep_destroy(ep);
  mc_ucp_worker_destroy(worker);
  mc_ucp_context_destroy(ctx);

  const char* bad_names[] = {"MC_SLICE_SIZE"};
  const char* bad_values[] = {"not-a-size"};
  EXPECT_EQ(mc_ucp_context_create(bad_names, bad_values, 1, &ctx), MC_UCP_ERR_INVALID_PARAM);
  EXPECT_EQ(ctx, nullptr);
}

TEST(UcpCApiErrors, StatusStrings) {
  EXPECT_STREQ(mc_ucp_status_string(MC_UCP_OK), "success");
  EXPECT_STRNE(mc_ucp_status_string(MC_UCP_ERR_TIMEOUT), "unknown status");
  EXPECT_STREQ(mc_ucp_status_string(static_cast<mc_ucp_status_t>(-100)), "unknown status");
}

}  // namespace

namespace {

// Blocking progress through the C API: a tcp-only worker (event fd; the
// poll interval is an hour, so only events and signals end a wait).
TEST(UcpCApiWait, EventFdArmWaitAndSignal) {
  const char* names[] = {"MC_TLS", "NET_DEVICES", "MC_POLL_INTERVAL", "MC_THREAD_MODE"};
  const char* values[] = {"tcp", "lo", "1h", "multi"};
  mc_ucp_context_t* ctx = nullptr;
  ASSERT_EQ(mc_ucp_context_create(names, values, 4, &ctx), MC_UCP_OK);
  mc_ucp_worker_t* w = nullptr;
  const mc_ucp_status_t s = mc_ucp_worker_create(ctx, &w);
  if (s == MC_UCP_ERR_NO_DEVICE) {
    mc_ucp_context_destroy(ctx);
    GTEST_SKIP() << "tcp is not available";
  }
  ASSERT_EQ(s, MC_UCP_OK);
  EXPECT_GE(mc_ucp_worker_event_fd(w), 0);
  mc_ucp_worker_progress(w);
  EXPECT_EQ(mc_ucp_worker_wait(w, 10), MC_UCP_ERR_TIMEOUT);
  mc_ucp_worker_signal(w);
  EXPECT_EQ(mc_ucp_worker_wait(w, -1), MC_UCP_OK);  // the signal ends it
  const mc_ucp_status_t armed = mc_ucp_worker_arm(w);
  EXPECT_TRUE(armed == MC_UCP_OK || armed == MC_UCP_ERR_BUSY) << mc_ucp_status_string(armed);
  EXPECT_EQ(mc_ucp_worker_event_fd(nullptr), -1);
  EXPECT_EQ(mc_ucp_worker_arm(nullptr), MC_UCP_ERR_INVALID_PARAM);
  EXPECT_EQ(mc_ucp_worker_wait(nullptr, 0), MC_UCP_ERR_INVALID_PARAM);
  mc_ucp_worker_signal(nullptr);
  mc_ucp_worker_destroy(w);
  mc_ucp_context_destroy(ctx);
}

}  // namespace
