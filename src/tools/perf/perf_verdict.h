// SPDX-License-Identifier: Apache-2.0
// The data check that ends every UCT and UCP test: what the receiving side
// holds against the sender's pattern, and the verdict the server sends the
// client. One copy for both families of tests.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "tools/perf/perf_registry.h"

namespace mc::perf {

/// What a receiving side holds at the end of a test.
struct Receipt {
  /// Active messages: checked by what arrived (the counts below and the
  /// pattern check made on arrival); otherwise the last put or get, by
  /// the pattern at `data`.
  bool am = false;
  uint64_t expected = 0;                  ///< messages the test sends
  uint64_t am_received = 0;               ///< active messages that arrived
  uint64_t am_final = 0;                  ///< of them, those that began like the last one
  size_t am_bad_length = 0;               ///< the length of one that arrived with another, 0: none
  const std::string* am_check = nullptr;  ///< the last one's pattern check ("" when it held)
  const uint8_t* data = nullptr;          ///< the last message's destination
  size_t length = 0;                      ///< bytes of one message
  uint64_t seed = 0;                      ///< the sender's pattern of the last message
  /// A put ping-pong's: the last byte holds the sequence number of the last
  /// message instead of the pattern.
  bool sequenced = false;
};

/// "" when `r` holds what the sender sent, else what differs.
std::string check_receipt(const Receipt& r);

/// The end of a test, once everything posted completed and was flushed.
/// The server serves until the client says Done (`serve_until_done`),
/// checks what it received (`check_own`) and sends its verdict. The client
/// stops its clock (a stream test), says Done, takes the verdict, checks
/// its own, and writes the outcome to `ctx.info->check`, naming `who`
/// checked the last message. BadData when a check failed (logged).
Status exchange_verdict(RunContext& ctx, bool client, bool stream,
                        const std::function<Status()>& serve_until_done,
                        const std::function<std::string()>& check_own, const char* who);

}  // namespace mc::perf
