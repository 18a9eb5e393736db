// SPDX-License-Identifier: Apache-2.0
// The tcp transport's wire formats: the frame header, the packed rkey payload
// and the packed addresses. Header-only so the white-box tests check exactly
// the decoder the transport runs. Everything is little-endian unless noted.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "ucs/datastruct/wire.h"
#include "ucs/status/status.h"
#include "uct/api/types.h"

namespace mc::uct::tcp::wire {

/// Frame header, 48 bytes, then `length` payload bytes:
///
///   off size field
///     0    2 magic 0x544d ("MT")
///     2    1 version (kVersion)
///     3    1 op (Op)
///     4    1 flags: none defined in version 2, must be 0
///     5    1 am id: Am only, < kAmIdMax
///     6    1 status: int8 Status of a reply (PutAck, GetResp), 0 otherwise
///     7    1 reserved, 0
///     8    4 length: payload bytes after the header
///    12    4 get length: bytes asked by a GetReq; a Hello's connection index; 0 otherwise
///    16    8 remote address: Put, GetReq; a Hello's sender (kHelloIdentity)
///    24    8 region id: Put, GetReq (from the packed rkey)
///    32    8 region key: Put, GetReq (the registration's secret)
///    40    8 request id: Put, PutAck, GetReq, GetResp, Ping, Pong; a HelloAck's verdict
///
/// Requests: Am, Put, GetReq, Ping. Replies: PutAck (status of a Put),
/// GetResp (status, then the data when Ok), Pong. Each field an op does not
/// use must be zero; the decoder refuses anything else.
///
/// Connection sharing (version 2). The first frame on every connection an
/// endpoint opens is a Hello: the sender iface's IPv4 address and listening
/// port, and the connection's index in its endpoint. Index 0, the
/// endpoint's primary connection (active messages and small operations),
/// may be shared: the target answers it with a HelloAck whose verdict
/// says where the endpoint sends:
///   Own (0): on this connection, which the target has no endpoint of its
///     own on yet (one it creates later may adopt it and send there too);
///   Yield (1): not here; the target's own endpoint to us has a primary
///     connection coming that ours is to adopt (ties between two endpoints
///     connecting to each other at once: the lower address's connection
///     wins);
///   Shared (2): on this connection, and an endpoint of the target sends
///     its requests on it too.
/// Either side may then send requests on a shared connection, and each
/// answers on it the requests it received. An endpoint sends nothing but
/// its Hello before its verdict. Bye: "I send no more requests here"; a
/// side with no endpoint on the connection closes it once it has had one.
inline constexpr uint16_t kMagic = 0x544d;
inline constexpr uint8_t kVersion = 2;
inline constexpr size_t kHeaderSize = 48;

enum class Op : uint8_t {
  Am = 1,
  Put = 2,
  PutAck = 3,
  GetReq = 4,
  GetResp = 5,
  Ping = 6,
  Pong = 7,
  Hello = 8,
  HelloAck = 9,
  Bye = 10
};

/// A HelloAck's verdict (its request id field).
enum class Verdict : uint8_t { Own = 0, Yield = 1, Shared = 2 };

/// Connection indexes a Hello may carry (MC_TCP_CONNS is at most 16).
inline constexpr uint32_t kMaxConnIndex = 255;

/// A Hello's sender, in its remote address field: IPv4 address (host byte
/// order) << 16 | listening port. Comparing two of them breaks ties.
inline uint64_t hello_identity(uint32_t ipv4_host_order, uint16_t port) {
  return (uint64_t{ipv4_host_order} << 16) | port;
}

struct FrameHeader {
  Op op = Op::Am;
  uint8_t flags = 0;
  uint8_t am_id = 0;
  ucs::Status status = ucs::Status::Ok;
  uint32_t length = 0;
  uint32_t get_length = 0;
  uint64_t remote_addr = 0;
  uint64_t region_id = 0;
  uint64_t region_key = 0;
  uint64_t req_id = 0;
};

/// The Hello an endpoint sends first on its connection `index`.
inline FrameHeader hello_header(uint64_t identity, uint32_t index) {
  FrameHeader h;
  h.op = Op::Hello;
  h.remote_addr = identity;
  h.get_length = index;
  return h;
}

/// What a receiver accepts in one frame.
struct Limits {
  uint32_t max_am = 0;   ///< payload of an Am (header bytes included)
  uint32_t max_rma = 0;  ///< payload of a Put, a GetResp, and a GetReq's get length
};

namespace detail {
inline bool valid_reply_status(int8_t s) {
  return s == 0 || (s <= static_cast<int8_t>(ucs::Status::NoResource) &&
                    s >= static_cast<int8_t>(ucs::Status::Rejected));
}
}  // namespace detail

/// Writes `h` into `out` (kHeaderSize bytes).
inline void encode(const FrameHeader& h, uint8_t* out) {
  using ucs::store_le;
  store_le(out + 0, kMagic, 2);
  out[2] = kVersion;
  out[3] = static_cast<uint8_t>(h.op);
  out[4] = h.flags;
  out[5] = h.am_id;
  out[6] = static_cast<uint8_t>(static_cast<int8_t>(h.status));
  out[7] = 0;
  store_le(out + 8, h.length, 4);
  store_le(out + 12, h.get_length, 4);
  store_le(out + 16, h.remote_addr, 8);
  store_le(out + 24, h.region_id, 8);
  store_le(out + 32, h.region_key, 8);
  store_le(out + 40, h.req_id, 8);
}

/// Decodes and checks one header. BadData (with `*reason`) for a short
/// buffer, a wrong magic, an unknown op, flags or reserved bits set, a field
/// the op does not use that is not zero, an AM id out of range, a status that
/// is not a reply status, or a length over `limits`; VersionMismatch for
/// another version.
inline ucs::Result<FrameHeader> decode(std::span<const uint8_t> in, const Limits& limits,
                                       std::string* reason) {
  auto bad = [reason](const std::string& why, ucs::Status s = ucs::Status::BadData) {
    if (reason) *reason = why;
    return s;
  };
  ucs::WireReader r(in);
  const uint16_t magic = r.u16();
  const uint8_t version = r.u8();
  const uint8_t op = r.u8();
  FrameHeader h;
  h.flags = r.u8();
  h.am_id = r.u8();
  const auto status = static_cast<int8_t>(r.u8());
  const uint8_t reserved = r.u8();
  h.length = r.u32();
  h.get_length = r.u32();
  h.remote_addr = r.u64();
  h.region_id = r.u64();
  h.region_key = r.u64();
  h.req_id = r.u64();
  if (!r.ok()) return bad("truncated header (" + std::to_string(in.size()) + " bytes)");
  if (magic != kMagic) return bad("bad magic " + std::to_string(magic));
  if (version != kVersion) {
    return bad("wire version " + std::to_string(version) + ", expected " + std::to_string(kVersion),
               ucs::Status::VersionMismatch);
  }
  if (op < static_cast<uint8_t>(Op::Am) || op > static_cast<uint8_t>(Op::Bye)) {
    return bad("unknown op " + std::to_string(op));
  }
  h.op = static_cast<Op>(op);
  if (h.flags != 0 || reserved != 0) return bad("flags or reserved bits set");
  const bool reply = h.op == Op::PutAck || h.op == Op::GetResp;
  if (reply ? !detail::valid_reply_status(status) : status != 0) {
    return bad("invalid status " + std::to_string(status));
  }
  h.status = static_cast<ucs::Status>(status);
  const bool rma_target = h.op == Op::Put || h.op == Op::GetReq;
  if (!rma_target && (h.region_id || h.region_key || (h.remote_addr && h.op != Op::Hello))) {
    return bad("remote address or region set on a frame that has none");
  }
  if (h.op != Op::Am && h.am_id != 0) return bad("am id set on a frame that is not an am");
  if (h.op != Op::GetReq && h.op != Op::Hello && h.get_length != 0)
    return bad("get length set on a frame that is not a get");
  switch (h.op) {
    case Op::Am:
      if (h.am_id >= kAmIdMax) return bad("am id " + std::to_string(h.am_id) + " out of range");
      if (h.req_id != 0) return bad("request id set on an am");
      if (h.length > limits.max_am) return bad("am of " + std::to_string(h.length) + " bytes");
      break;
    case Op::Put:
      if (h.length > limits.max_rma) return bad("put of " + std::to_string(h.length) + " bytes");
      break;
    case Op::GetReq:
      if (h.length != 0) return bad("payload on a get request");
      if (h.get_length > limits.max_rma) {
        return bad("get of " + std::to_string(h.get_length) + " bytes");
      }
      break;
    case Op::GetResp:
      if (h.length > limits.max_rma)
        return bad("get reply of " + std::to_string(h.length) + " bytes");
      if (h.status != ucs::Status::Ok && h.length != 0) return bad("payload on a failed get reply");
      break;
    case Op::PutAck:
    case Op::Ping:
    case Op::Pong:
      if (h.length != 0) return bad("payload on a control frame");
      break;
    case Op::Hello:
      if (h.length != 0 || h.req_id != 0) return bad("payload or request id on a hello");
      if ((h.remote_addr >> 48) != 0 || (h.remote_addr & 0xffff) == 0) {
        return bad("hello without a valid address and port");
      }
      if (h.get_length > kMaxConnIndex) {
        return bad("hello for connection " + std::to_string(h.get_length));
      }
      break;
    case Op::HelloAck:
      if (h.length != 0) return bad("payload on a control frame");
      if (h.req_id > static_cast<uint64_t>(Verdict::Shared)) {
        return bad("unknown verdict " + std::to_string(h.req_id));
      }
      break;
    case Op::Bye:
      if (h.length != 0 || h.req_id != 0) return bad("payload or request id on a bye");
      break;
  }
  return h;
}

/// Packed rkey payload (inside the uct/base/rkey_codec envelope), 36 bytes:
///   u64 region id | u64 region key | u64 base | u64 length | u32 access bits
struct RkeyPayload {
  uint64_t id = 0;
  uint64_t key = 0;
  uint64_t base = 0;
  uint64_t length = 0;
  uint32_t access = 0;
};
inline constexpr size_t kRkeyPayloadSize = 36;

inline void encode_rkey(const RkeyPayload& p, std::vector<uint8_t>* out) {
  ucs::WireWriter w(out);
  w.u64(p.id);
  w.u64(p.key);
  w.u64(p.base);
  w.u64(p.length);
  w.u32(p.access);
}

/// False (with `*reason`) for a payload of the wrong size, an empty or
/// wrapping range, or unknown access bits.
inline bool decode_rkey(std::span<const uint8_t> in, RkeyPayload* out, std::string* reason) {
  ucs::WireReader r(in);
  RkeyPayload p;
  p.id = r.u64();
  p.key = r.u64();
  p.base = r.u64();
  p.length = r.u64();
  p.access = r.u32();
  const char* why = nullptr;
  if (!r.at_end()) {
    why = "payload is not 36 bytes";
  } else if (p.length == 0 || p.base + p.length < p.base) {
    why = "empty or wrapping range";
  } else if ((p.access & ~static_cast<uint32_t>(kAccessAll)) != 0) {
    why = "unknown access bits";
  }
  if (why) {
    if (reason) *reason = why;
    return false;
  }
  *out = p;
  return true;
}

/// Device address, 21 bytes: u8 family (4 = IPv4) | 4 bytes IPv4 address in
/// network byte order | u64 boot id hash | u64 network namespace inode. The
/// last two tell whether a loopback address is ours.
struct DeviceAddr {
  uint32_t ipv4 = 0;  ///< network byte order, as in in_addr::s_addr
  uint64_t boot_id = 0;
  uint64_t net_ns = 0;
};
inline constexpr uint8_t kFamilyIpv4 = 4;
inline constexpr size_t kDeviceAddrSize = 21;

inline std::vector<uint8_t> encode_device_addr(const DeviceAddr& a) {
  std::vector<uint8_t> out;
  out.reserve(kDeviceAddrSize);
  ucs::WireWriter w(&out);
  w.u8(kFamilyIpv4);
  uint8_t ip[4];
  std::memcpy(ip, &a.ipv4, 4);  // already in network byte order
  for (uint8_t b : ip) w.u8(b);
  w.u64(a.boot_id);
  w.u64(a.net_ns);
  return out;
}

/// BadData for a wrong size; Unsupported for another address family.
inline ucs::Result<DeviceAddr> decode_device_addr(std::span<const uint8_t> in) {
  ucs::WireReader r(in);
  const uint8_t family = r.u8();
  auto ip = r.bytes(4);
  DeviceAddr a;
  a.boot_id = r.u64();
  a.net_ns = r.u64();
  if (!r.at_end()) return ucs::Status::BadData;
  if (family != kFamilyIpv4) return ucs::Status::Unsupported;
  std::memcpy(&a.ipv4, ip.data(), 4);
  return a;
}

/// Iface address, 2 bytes: u16 listening port.
inline constexpr size_t kIfaceAddrSize = 2;

inline std::vector<uint8_t> encode_iface_addr(uint16_t port) {
  std::vector<uint8_t> out;
  ucs::WireWriter(&out).u16(port);
  return out;
}

/// BadData for a wrong size or port 0.
inline ucs::Result<uint16_t> decode_iface_addr(std::span<const uint8_t> in) {
  ucs::WireReader r(in);
  const uint16_t port = r.u16();
  if (!r.at_end() || port == 0) return ucs::Status::BadData;
  return port;
}

}  // namespace mc::uct::tcp::wire
