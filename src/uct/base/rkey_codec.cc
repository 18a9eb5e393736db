// SPDX-License-Identifier: Apache-2.0
// Packed remote key envelope.
#include "uct/base/rkey_codec.h"

#include "ucs/datastruct/wire.h"
#include "ucs/log/log.h"

namespace mc::uct {

namespace {
constexpr uint16_t kRkeyMagic = 0x4b52;
}

size_t rkey_envelope_size(std::string_view md_name) { return 2 + 1 + 1 + md_name.size() + 2; }

void rkey_pack_envelope(std::string_view md_name, std::span<const uint8_t> payload,
                        std::vector<uint8_t>* out) {
  ucs::WireWriter w(out);
  w.u16(kRkeyMagic);
  w.u8(kRkeyVersion);
  w.u8(static_cast<uint8_t>(md_name.size()));
  w.bytes(md_name.data(), md_name.size());
  w.u16(static_cast<uint16_t>(payload.size()));
  w.bytes(payload.data(), payload.size());
}

ucs::Result<std::span<const uint8_t>> rkey_unpack_envelope(std::string_view md_name,
                                                           std::span<const uint8_t> packed) {
  ucs::WireReader r(packed);
  const uint16_t magic = r.u16();
  const uint8_t version = r.u8();
  const uint8_t name_len = r.u8();
  auto name = r.bytes(name_len);
  const uint16_t payload_len = r.u16();
  auto payload = r.bytes(payload_len);
  if (!r.ok() || !r.at_end() || magic != kRkeyMagic) {
    MC_LOG(error) << "packed rkey for md " << md_name << " is truncated, too long or garbage ("
                  << packed.size() << " bytes)";
    return ucs::Status::InvalidParam;
  }
  if (version != kRkeyVersion) {
    MC_LOG(error) << "packed rkey has version " << unsigned(version) << ", this mc reads version "
                  << unsigned(kRkeyVersion);
    return ucs::Status::InvalidParam;
  }
  const std::string_view got(reinterpret_cast<const char*>(name.data()), name.size());
  if (got != md_name) {
    MC_LOG(error) << "packed rkey belongs to md '" << got << "', not '" << md_name << "'";
    return ucs::Status::InvalidParam;
  }
  return payload;
}

}  // namespace mc::uct
