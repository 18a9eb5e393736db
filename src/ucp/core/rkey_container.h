// SPDX-License-Identifier: Apache-2.0
// The packed UCP rkey: a versioned container of per-md packed UCT rkeys and
// the range they cover.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "ucs/status/status.h"
#include "ucs/sys/visibility.h"

namespace mc::ucp {

/// Version written by rkey_container_pack(); unpack refuses any other.
/// 2: the registration's memory type (a peer stages memory no lane reaches).
inline constexpr uint8_t kRkeyContainerVersion = 2;

/// What a packed UCP rkey holds.
struct RkeyContainer {
  uint64_t address = 0;
  uint64_t length = 0;
  /// The memory type of the registration (uct::MemType: host, cuda, ...).
  uint8_t mem_type = 0;
  /// (md name, packed UCT rkey), one per memory domain of the registration.
  std::vector<std::pair<std::string, std::vector<uint8_t>>> entries;
};

/// Packs `c`. Pure.
MC_INTERNAL std::vector<uint8_t> rkey_container_pack(const RkeyContainer& c);

/// Unpacks; InvalidParam with `*why` for a bad magic, another version, an
/// unknown memory type, a length that does not fit or trailing bytes. A key
/// of host memory has at least one entry; one of other memory may have none
/// (no md of the peer's lanes registered it: the peer stages it). Logs
/// nothing. Pure.
MC_INTERNAL ucs::Result<RkeyContainer> rkey_container_unpack(std::span<const uint8_t> packed, std::string* why);

}  // namespace mc::ucp
