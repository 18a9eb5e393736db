// SPDX-License-Identifier: Apache-2.0
// Packed UCP rkey codec.
//
// Wire format, little-endian:
//   u32 magic 0x4b52434d ("MCRK") | u8 version (2) | u8 count | u8 reserved (0) |
//   u8 memory type (uct::MemType, host 0 .. file 3) |
//   u64 address | u64 length | count x { str md name | blob packed UCT rkey }
// where str is u16 length + bytes and blob is u32 length + bytes.
#include "ucp/core/rkey_container.h"

#include "ucs/datastruct/wire.h"
#include "uct/api/types.h"

namespace mc::ucp {

namespace {
constexpr uint32_t kMagic = 0x4b52434d;
constexpr size_t kMaxEntries = 32;
constexpr uint8_t kMaxMemType = static_cast<uint8_t>(uct::MemType::File);
}  // namespace

std::vector<uint8_t> rkey_container_pack(const RkeyContainer& c) {
  std::vector<uint8_t> out;
  ucs::WireWriter w(&out);
  w.u32(kMagic);
  w.u8(kRkeyContainerVersion);
  w.u8(static_cast<uint8_t>(c.entries.size()));
  w.u8(0);
  w.u8(c.mem_type);
  w.u64(c.address);
  w.u64(c.length);
  for (const auto& [md, packed] : c.entries) {
    w.str(md);
    w.blob(packed);
  }
  return out;
}

ucs::Result<RkeyContainer> rkey_container_unpack(std::span<const uint8_t> packed,
                                                 std::string* why) {
  auto fail = [why](std::string text) {
    if (why) *why = std::move(text);
    return ucs::Status::InvalidParam;
  };
  ucs::WireReader r(packed);
  const uint32_t magic = r.u32();
  const uint8_t version = r.u8();
  const uint8_t count = r.u8();
  const uint8_t reserved = r.u8();
  RkeyContainer c;
  c.mem_type = r.u8();
  c.address = r.u64();
  c.length = r.u64();
  if (!r.ok())
    return fail("packed rkey of " + std::to_string(packed.size()) + " bytes is too short");
  if (magic != kMagic) return fail("not a packed rkey (bad magic)");
  if (version != kRkeyContainerVersion) {
    return fail("packed rkey version " + std::to_string(version) + " is not supported (" +
                std::to_string(kRkeyContainerVersion) + " expected)");
  }
  if (reserved != 0) return fail("packed rkey has reserved bits set");
  if (c.mem_type > kMaxMemType) {
    return fail("packed rkey has unknown memory type " + std::to_string(c.mem_type));
  }
  const bool host = c.mem_type == static_cast<uint8_t>(uct::MemType::Host);
  if ((host && count == 0) || count > kMaxEntries) {
    return fail("packed rkey has " + std::to_string(count) + " entries");
  }
  if (c.address + c.length < c.address) return fail("packed rkey range wraps around");
  for (uint8_t i = 0; i < count; ++i) {
    std::string md = r.str();
    auto blob = r.blob();
    if (!r.ok()) return fail("packed rkey is truncated in entry " + std::to_string(i));
    c.entries.emplace_back(std::move(md), std::vector<uint8_t>(blob.begin(), blob.end()));
  }
  if (!r.at_end()) return fail("packed rkey has trailing bytes");
  return c;
}

}  // namespace mc::ucp
