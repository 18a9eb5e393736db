// SPDX-License-Identifier: Apache-2.0
// mc_perftest's end-of-test data check, shared by the UCT and UCP tests:
// what a receiver holds against the sender's pattern (check_receipt), and
// the verdict the server sends the client over a real socket pair
// (exchange_verdict).
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "tools/perf/perf_params.h"
#include "tools/perf/perf_rte.h"
#include "tools/perf/perf_verdict.h"

namespace mc::perf {
namespace {

constexpr size_t kLength = 256;
constexpr uint64_t kSeed = 42;

// The last message of a put test as the sender wrote it.
std::vector<uint8_t> sent() {
  std::vector<uint8_t> b(kLength);
  pattern_fill(b.data(), b.size(), kSeed);
  return b;
}

Receipt put_receipt(const std::vector<uint8_t>& data) {
  return {.expected = 1000, .data = data.data(), .length = kLength, .seed = kSeed};
}

TEST(PerfVerdict, TheSendersPatternHolds) {
  const std::vector<uint8_t> b = sent();
  EXPECT_EQ(check_receipt(put_receipt(b)), "");
}

TEST(PerfVerdict, ACorruptByteIsNamed) {
  std::vector<uint8_t> b = sent();
  b[77] ^= 0xff;
  EXPECT_EQ(check_receipt(put_receipt(b)), "byte 77 of the last message differs from the sender's");
}

TEST(PerfVerdict, APingPongPutEndsInItsSequenceNumber) {
  std::vector<uint8_t> b = sent();
  Receipt r = put_receipt(b);
  r.sequenced = true;
  b[kLength - 1] = static_cast<uint8_t>(999);  // message 999 of 1000: the last
  EXPECT_EQ(check_receipt(r), "");
  b[kLength - 1] = 3;
  EXPECT_EQ(check_receipt(r), "the last byte holds sequence number 3, 231 expected");
}

// Active messages as the handler counts them (AmTally::arrive): ten of 64
// bytes, the last one known by its first bytes and checked whole.
TEST(PerfVerdict, ActiveMessagesByWhatArrived) {
  constexpr size_t kAm = 64;
  std::vector<uint8_t> last(kAm), other(kAm, 0), corrupt;
  pattern_fill(last.data(), kAm, kSeed);
  corrupt = last;
  corrupt[20] ^= 0xff;  // past the first bytes that mark it as the last one
  // `others` messages, then `lasts` copies of `final`, and one of `odd` bytes.
  auto tally = [&](int others, const std::vector<uint8_t>& final, int lasts, size_t odd = 0) {
    AmTally am;
    am.expect(kAm, kSeed);
    for (int i = 0; i < others; ++i) am.arrive(other.data(), kAm);
    for (int i = 0; i < lasts; ++i) am.arrive(final.data(), kAm);
    if (odd) am.arrive(other.data(), odd);
    return am;
  };
  const std::string bad = "byte 20 of the last active message differs from the sender's";
  Receipt r{.expected = 10, .length = kAm};
  const AmTally held = tally(9, last, 1);
  r.am = &held;
  EXPECT_EQ(check_receipt(r), "");
  const AmTally broken = tally(9, corrupt, 1);
  r.am = &broken;
  EXPECT_EQ(check_receipt(r), bad);
  const AmTally short_of_one = tally(8, last, 1);
  r.am = &short_of_one;
  EXPECT_EQ(check_receipt(r), "9 active messages arrived, 10 expected");
  const AmTally twice = tally(8, last, 2);
  r.am = &twice;
  EXPECT_EQ(check_receipt(r), "the last active message arrived 2 times");
  const AmTally odd = tally(8, last, 1, 63);
  r.am = &odd;
  EXPECT_EQ(check_receipt(r), "an active message of 63 bytes arrived, 64 expected");
}

// A client and a server thread over Rte::pair: the server's check travels
// to the client, whose own check joins it.
struct Outcome {
  Status client = Status::Ok, server = Status::Ok;
  std::string check;
};

Outcome exchange(const std::string& server_own, const std::string& client_own) {
  std::unique_ptr<Rte> c, s;
  EXPECT_EQ(Rte::pair(&c, &s), Status::Ok);
  Params params;
  RunInfo client_info, server_info;
  RunContext cctx{params, Role::Client}, sctx{params, Role::Server};
  cctx.rte = c.get();
  cctx.info = &client_info;
  sctx.rte = s.get();
  sctx.info = &server_info;
  Outcome out;
  bool served = false;
  std::thread server([&] {
    out.server = exchange_verdict(
        sctx, false, false, [&] { return s->recv(MsgType::Done, sctx.timeout).status(); },
        [&] {
          served = true;
          return server_own;
        },
        "the server");
  });
  out.client = exchange_verdict(
      cctx, true, false, [] { return Status::Ok; }, [&] { return client_own; }, "the server");
  server.join();
  EXPECT_TRUE(served);
  out.check = client_info.check;
  return out;
}

TEST(PerfVerdict, BothHoldThePatternAndTheClientSaysWhoChecked) {
  const Outcome o = exchange("", "");
  EXPECT_EQ(o.client, Status::Ok);
  EXPECT_EQ(o.server, Status::Ok);
  EXPECT_EQ(o.check,
            "passed (the last message, checked by the server, matches the sender's pattern)");
}

TEST(PerfVerdict, TheServersFailureReachesTheClient) {
  const Outcome o = exchange("byte 5 of the last message differs from the sender's", "");
  EXPECT_EQ(o.client, Status::BadData);
  EXPECT_EQ(o.server, Status::BadData);
  EXPECT_EQ(o.check, "FAILED: server: byte 5 of the last message differs from the sender's");
}

TEST(PerfVerdict, TheClientsOwnFailureIsItsOwn) {
  const Outcome o = exchange("", "the last byte holds sequence number 1, 2 expected");
  EXPECT_EQ(o.client, Status::BadData);
  EXPECT_EQ(o.server, Status::Ok);
  EXPECT_EQ(o.check, "FAILED: client: the last byte holds sequence number 1, 2 expected");
}

}  // namespace
}  // namespace mc::perf
