// SPDX-License-Identifier: Apache-2.0
// The UCP active-message headers on the wire, carried in UCT active messages.
#pragma once

#include <cstddef>
#include <cstdint>

namespace mc::ucp::proto {

/// UCT active-message ids UCP uses on every iface.
inline constexpr uint8_t kAmIdSingle = 1;  ///< a whole message
inline constexpr uint8_t kAmIdFrag = 2;    ///< one fragment of a large message

/// Single message, 8 bytes, little-endian (the UCT am_short header word):
///   u16 user am id | u16 flags (0) | u32 reserved (0)   then the payload.
inline constexpr size_t kAmSingleHeader = 8;

/// Fragment, 40 bytes, little-endian:
///   u16 user am id | u16 flags (0) | u32 reserved (0) | u64 sender worker uuid |
///   u64 message id | u64 total length | u64 offset     then the fragment's bytes.
inline constexpr size_t kAmFragHeader = 40;

/// Largest message a receiver agrees to reassemble (a forged total length
/// must not make it allocate without bound).
inline constexpr uint64_t kAmMaxMessage = uint64_t{1} << 34;

}  // namespace mc::ucp::proto
