// SPDX-License-Identifier: Apache-2.0
// The UCP active-message headers on the wire, carried in UCT active messages.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace mc::ucp::proto {

/// UCT active-message ids UCP uses on every iface.
inline constexpr uint8_t kAmIdSingle = 1;          ///< a whole message
inline constexpr uint8_t kAmIdFrag = 2;            ///< one fragment of a large message
inline constexpr uint8_t kAmIdRts = 3;             ///< rendezvous: request to send
inline constexpr uint8_t kAmIdAts = 4;             ///< rendezvous: acknowledgement to the sender
inline constexpr uint8_t kAmIdStagingRequest = 5;  ///< remote staging: the initiator's request
inline constexpr uint8_t kAmIdStagingDone = 6;     ///< remote staging: the target's completion

/// Single message, 8 bytes, little-endian (the UCT am_short header word):
///   u16 user am id | u16 flags (0) | u32 reserved (0)   then the payload.
inline constexpr size_t kAmSingleHeader = 8;

/// A single message's header as the UCT am_short header word: its 8 bytes
/// in memory order, whatever the host's byte order.
inline uint64_t am_single_header_word(uint16_t am_id) {
  const uint8_t bytes[kAmSingleHeader] = {static_cast<uint8_t>(am_id),
                                          static_cast<uint8_t>(am_id >> 8)};
  uint64_t word;
  std::memcpy(&word, bytes, sizeof(word));
  return word;
}

/// Fragment, 40 bytes, little-endian:
///   u16 user am id | u16 flags (0) | u32 reserved (0) | u64 sender worker uuid |
///   u64 message id | u64 total length | u64 offset     then the fragment's bytes.
inline constexpr size_t kAmFragHeader = 40;

/// Rendezvous request to send, 52 bytes then two blobs, little-endian:
///   u16 user am id | u16 flags (0) | u32 reserved (0) | u64 sender worker uuid |
///   u64 rendezvous id | u64 length | u64 sender buffer address |
///   u32 address length A | u32 rkey length K | u32 reserved (0)
///   then A bytes of the sender's worker address and K bytes of its packed rkey.
inline constexpr size_t kAmRtsHeader = 52;

/// Rendezvous acknowledgement, 16 bytes, little-endian:
///   u64 rendezvous id | i32 final status of the receiver's get | u32 reserved (0)
inline constexpr size_t kAmAtsLength = 16;

/// Remote staging request, 56 bytes then two blobs, little-endian:
///   u8 version (1) | u8 op (0 put, 1 get) | u16 reserved (0) | u32 reserved (0) |
///   u64 initiator worker uuid | u64 request id | u64 target memory address |
///   u64 length | u64 initiator host buffer address |
///   u32 address length A | u32 rkey length K
///   then A bytes of the initiator's worker address and K bytes of the packed
///   rkey of its host buffer.
inline constexpr size_t kAmRemoteStagingHeader = 56;

/// Remote staging completion, 16 bytes, little-endian:
///   u8 version (1) | u8 reserved (0) | u16 reserved (0) | i32 final status |
///   u64 request id
inline constexpr size_t kAmRemoteStagingDoneLength = 16;

/// Largest message a receiver agrees to reassemble (a forged total length
/// must not make it allocate without bound).
inline constexpr uint64_t kAmMaxMessage = uint64_t{1} << 34;

}  // namespace mc::ucp::proto
