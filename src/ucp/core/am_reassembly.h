// SPDX-License-Identifier: Apache-2.0
// AmReassembly: joins the fragments of large active messages, in any order
// and with duplicates (a re-issued fragment), keyed by sender and message.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "ucs/status/status.h"

namespace mc::ucp {

class AmReassembly {
 public:
  /// Called with a whole message: user am id, bytes, length.
  using Deliver = std::function<void(uint16_t id, const void* data, size_t length)>;

  /// Takes one fragment (header of proto/am_wire.h, then bytes) and calls
  /// `deliver` when its message is whole. BadData (logged) for a fragment
  /// whose header is short or whose range does not fit its message.
  ucs::Status on_fragment(const void* data, size_t length, const Deliver& deliver);

  /// Messages waiting for fragments.
  size_t pending() const { return messages_.size(); }

 private:
  struct Message {
    uint16_t id = 0;
    std::vector<uint8_t> bytes;
    std::set<uint64_t> offsets;  ///< fragments received, by offset
    uint64_t received = 0;
  };
  std::map<std::pair<uint64_t, uint64_t>, Message> messages_;  ///< (sender, message id)
};

}  // namespace mc::ucp
