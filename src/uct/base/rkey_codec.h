// SPDX-License-Identifier: Apache-2.0
// The common envelope of packed remote keys: magic, version and md name
// around a transport's private payload, so unpack can reject garbage, keys
// of another md and future versions before touching the payload.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "ucs/status/status.h"

namespace mc::uct {

/// Current envelope version.
inline constexpr uint8_t kRkeyVersion = 1;

/// Bytes the envelope adds to a payload for md `md_name`.
size_t rkey_envelope_size(std::string_view md_name);

/// Appends the envelope and `payload` to `out`.
///   u16 magic 0x4b52 ("RK") | u8 version | u8 md name length | md name |
///   u16 payload length | payload          (little-endian)
void rkey_pack_envelope(std::string_view md_name, std::span<const uint8_t> payload,
                        std::vector<uint8_t>* out);

/// Checks the envelope of `packed` and returns the payload. InvalidParam
/// (logged, naming what is wrong) for a bad magic, a newer version, another
/// md, any length that does not fit, or bytes after the payload.
ucs::Result<std::span<const uint8_t>> rkey_unpack_envelope(std::string_view md_name,
                                                           std::span<const uint8_t> packed);

}  // namespace mc::uct
