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

/// What a receiver of a test's active messages counts as they arrive (in
/// the handler, during progress()): the last one, known by its first bytes
/// so that order does not matter, is checked whole against the sender's
/// final pattern.
struct AmTally {
  /// Sets what the sender's last message of `length` bytes looks like.
  void expect(size_t length, uint64_t final_seed);
  /// One message of `length` bytes arrived.
  void arrive(const void* data, size_t length);

  uint64_t received = 0;     ///< messages that arrived
  uint64_t final_count = 0;  ///< of them, those that began like the last one
  size_t bad_length = 0;     ///< the length of one that arrived with another, 0: none
  std::string check = "the last active message did not arrive";  ///< "" once it held

 private:
  size_t length_ = 0;
  uint64_t final_seed_ = 0;
  uint8_t final_head_[8] = {};  ///< the first bytes of the last message
};

/// What a receiving side holds at the end of a test.
struct Receipt {
  /// Active messages: checked by what arrived; null: the last put or get,
  /// by the pattern at `data`.
  const AmTally* am = nullptr;
  uint64_t expected = 0;          ///< messages the test sends
  const uint8_t* data = nullptr;  ///< the last message's destination
  size_t length = 0;              ///< bytes of one message
  uint64_t seed = 0;              ///< the sender's pattern of the last message
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
