// SPDX-License-Identifier: Apache-2.0
// The end-of-test data check of the UCT and UCP tests.
#include "tools/perf/perf_verdict.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "tools/perf/perf_measure.h"
#include "tools/perf/perf_params.h"
#include "tools/perf/perf_rte.h"
#include "ucs/datastruct/wire.h"
#include "ucs/log/log.h"

namespace mc::perf {

void AmTally::expect(size_t length, uint64_t final_seed) {
  length_ = length;
  final_seed_ = final_seed;
  pattern_fill(final_head_, std::min(length, sizeof(final_head_)), final_seed);
}

void AmTally::arrive(const void* data, size_t length) {
  ++received;
  const auto* bytes = static_cast<const uint8_t*>(data);
  if (length != length_) {
    bad_length = length;
  } else if (std::memcmp(bytes, final_head_, std::min(length, sizeof(final_head_))) == 0) {
    ++final_count;
    const ptrdiff_t bad = pattern_check(bytes, length, final_seed_);
    check = bad < 0 ? ""
                    : "byte " + std::to_string(bad) +
                          " of the last active message differs from the sender's";
  }
}

std::string check_receipt(const Receipt& r) {
  if (const AmTally* am = r.am) {
    if (am->bad_length) {
      return "an active message of " + std::to_string(am->bad_length) + " bytes arrived, " +
             std::to_string(r.length) + " expected";
    }
    if (am->received != r.expected) {
      return std::to_string(am->received) + " active messages arrived, " +
             std::to_string(r.expected) + " expected";
    }
    if (am->final_count != 1) {
      return "the last active message arrived " + std::to_string(am->final_count) + " times";
    }
    return am->check;
  }
  const size_t n = r.sequenced ? r.length - 1 : r.length;
  const ptrdiff_t bad = pattern_check(r.data, n, r.seed);
  if (bad >= 0) {
    return "byte " + std::to_string(bad) + " of the last message differs from the sender's";
  }
  if (n < r.length && r.data[n] != static_cast<uint8_t>(r.expected - 1)) {
    return "the last byte holds sequence number " + std::to_string(r.data[n]) + ", " +
           std::to_string(static_cast<uint8_t>(r.expected - 1)) + " expected";
  }
  return "";
}

Status exchange_verdict(RunContext& ctx, bool client, bool stream,
                        const std::function<Status()>& serve_until_done,
                        const std::function<std::string()>& check_own, const char* who) {
  Rte& rte = *ctx.rte;
  if (!client) {
    MC_RETURN_IF_ERROR(serve_until_done());
    const std::string own = check_own();
    std::vector<uint8_t> verdict;
    ucs::WireWriter w(&verdict);
    w.u8(own.empty() ? 1 : 0);
    w.str(own);
    MC_RETURN_IF_ERROR(rte.send(MsgType::Verdict, verdict));
    if (own.empty()) return Status::Ok;
    MC_LOG(error) << "data check failed: " << own;
    return Status::BadData;
  }
  if (stream) ctx.measure->finish();
  MC_RETURN_IF_ERROR(rte.send(MsgType::Done));
  MC_ASSIGN_OR_RETURN(const std::vector<uint8_t> wire, rte.recv(MsgType::Verdict, ctx.timeout));
  ucs::WireReader r(wire);
  const bool ok = r.u8() != 0;
  std::string server = r.str();
  if (!r.at_end()) return Status::BadData;
  if (!ok && server.empty()) server = "failed";
  const std::string own = check_own();
  if (own.empty() && server.empty()) {
    ctx.info->check = std::string("passed (the last message, checked by ") + who +
                      ", matches the sender's pattern)";
    return Status::Ok;
  }
  ctx.info->check = "FAILED:" + (own.empty() ? "" : " client: " + own) +
                    (server.empty() ? "" : " server: " + server);
  MC_LOG(error) << "data check " << ctx.info->check;
  return Status::BadData;
}

}  // namespace mc::perf
