// SPDX-License-Identifier: Apache-2.0
// The frames of notifications (sendNotify*, getNotifies), requests of the RPC
// listener (handshake.h framing, request codes kNotify and kNotifyKey). Both
// payloads start as kGetSegmentAuth's: token length u32, the token (empty
// when MC_AUTH_TOKEN is not set); what follows, all little-endian:
//
//   kNotify         version    u16  kNotifyVersion
//                   sender     u32 length + bytes: the sender's segment name
//                   generation u64  the sender engine's generation
//                   seq        u64  > every earlier seq of this sender engine
//                   nonce      16   a fresh ticket of this attempt (see below)
//                   key        16   the key the target gave the sender; zeros: none
//                   name       u32 length + bytes
//                   notify_msg u32 length + bytes
//   reply: code 0 (taken, or a duplicate of one taken), kNotifyNeedKey (a key
//   goes to the sender's listener first), or -Status (error text).
//
//   kNotifyKey      version    u16  kNotifyVersion
//                   nonce      16   the ticket of the kNotify this answers
//                   key        16   what the sender puts in its next kNotify
//   reply: code 0 (the ticket was awaited), -NoElem otherwise.
//
// A peer's frame is untrusted: every length is checked against what is left
// and the payload must end where its last field does.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "ucs/status/status.h"
#include "ucs/sys/visibility.h"

namespace mc::te {

using ucs::Status;

inline constexpr uint16_t kNotifyVersion = 1;
/// Nonces and keys: random, compared in constant time.
using NotifyKey = std::array<uint8_t, 16>;

struct NotifyFrame {
  std::string sender;
  uint64_t generation = 0;
  uint64_t seq = 0;
  NotifyKey nonce{};
  NotifyKey key{};
  std::string name;
  std::string msg;
};

struct NotifyKeyFrame {
  NotifyKey nonce{};
  NotifyKey key{};
};

/// The payload after the token prefix.
MC_INTERNAL std::string encode_notify(const NotifyFrame& frame);
MC_INTERNAL std::string encode_notify_key(const NotifyKeyFrame& frame);
/// BadData (truncated, trailing bytes, a length past the end) or
/// VersionMismatch, with `*error` naming the field.
MC_INTERNAL Status decode_notify(std::string_view payload, NotifyFrame* frame, std::string* error);
MC_INTERNAL Status decode_notify_key(std::string_view payload, NotifyKeyFrame* frame,
                                     std::string* error);

/// A random nonce or key (std::random_device).
MC_INTERNAL NotifyKey random_notify_key();
MC_INTERNAL bool notify_key_equal(const NotifyKey& a, const NotifyKey& b);

}  // namespace mc::te
