// SPDX-License-Identifier: Apache-2.0
// The handshake of the Transfer Engine's RPC listener: "give me your segment
// descriptor". One request and one response per TCP connection, each a frame:
//
//   magic   u32  0x4554434d ("MCTE" in memory order)
//   version u16  kHandshakeVersion
//   code    u16  request: kGetSegment; response: 0 (ok) or -Status (error)
//   length  u32  payload bytes, at most MC_HANDSHAKE_MAX_LENGTH
//   payload      request: the segment name; response: the SegmentDesc JSON,
//                or the error text
// all little-endian (12-byte header). With MC_AUTH_TOKEN set, the request is
// kGetSegmentAuth, whose payload is: token length u32, the token, the name.
// Notifications are requests of the same framing, kNotify and kNotifyKey,
// whose payloads always start with the token (notify_wire.h).
#pragma once

#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ucs/status/status.h"
#include "ucs/sys/visibility.h"

namespace mc::te {

using ucs::Result;
using ucs::Status;

inline constexpr uint32_t kHandshakeMagic = 0x4554434d;
inline constexpr uint16_t kHandshakeVersion = 1;
inline constexpr size_t kHandshakeHeaderSize = 12;
/// Request code: the descriptor of the named segment.
inline constexpr uint16_t kGetSegment = 1;
/// Request code: the same, with a shared secret (MC_AUTH_TOKEN) first.
inline constexpr uint16_t kGetSegmentAuth = 2;
/// Request codes of notifications (notify_wire.h).
inline constexpr uint16_t kNotify = 3;
inline constexpr uint16_t kNotifyKey = 4;
/// Reply code of kNotify: the target first sends a key to the sender's
/// listener (kNotifyKey); the sender sends again with it. Not a -Status.
inline constexpr uint16_t kNotifyNeedKey = 0x100;

/// A reply: its code (0, -Status, or a request's own code) and payload.
struct RpcReply {
  uint16_t code = 0;
  std::string payload;
};

struct FrameHeader {
  uint16_t code = 0;
  uint32_t length = 0;
};

/// A whole frame: header and payload.
MC_INTERNAL std::vector<uint8_t> encode_frame(uint16_t code, std::string_view payload);

/// Checks magic, version and length (<= max_length). BadData or
/// VersionMismatch or MessageTruncated with `*error` naming the field.
MC_INTERNAL Result<FrameHeader> decode_frame_header(std::span<const uint8_t> header,
                                                    size_t max_length, std::string* error);

/// The payload of a kGetSegmentAuth request.
MC_INTERNAL std::string encode_auth_request(std::string_view token, std::string_view segment);
/// Splits it into token and segment name; BadData when the token length
/// runs past the payload.
MC_INTERNAL Status decode_auth_request(std::string_view payload, std::string* token,
                                       std::string* segment);
/// Compares secrets in time that depends only on their lengths.
MC_INTERNAL bool token_equal(std::string_view a, std::string_view b);

/// Sends and receives whole buffers on a blocking-mode socket within a
/// deadline (CLOCK_MONOTONIC ns). IoError / Timeout / ConnectionReset, with
/// `*error` saying which and why.
MC_INTERNAL Status send_all(int fd, const void* data, size_t len, uint64_t deadline_ns,
                            std::string* error);
MC_INTERNAL Status recv_all(int fd, void* data, size_t len, uint64_t deadline_ns,
                            std::string* error);

/// Asks the listener at host:port for the descriptor of `segment`. Returns
/// the JSON text, or: Unreachable (connection refused / no route),
/// Timeout, BadData / VersionMismatch / MessageTruncated for a bad reply,
/// or the peer's own error (NoElem for an unknown segment, Rejected for a
/// missing or wrong token); `*error` names host:port and the cause. A
/// non-empty `token` is sent with the request (kGetSegmentAuth).
MC_INTERNAL Result<std::string> handshake_get_segment(const std::string& host, uint16_t port,
                                                      const std::string& segment, size_t max_length,
                                                      std::chrono::nanoseconds timeout,
                                                      std::string* error,
                                                      const std::string& token = {});

/// Sends one request frame to the listener at host:port and reads its
/// reply frame, within `timeout` for the whole exchange. Unreachable,
/// Timeout, ConnectionReset, BadData / VersionMismatch / MessageTruncated
/// (a reply frame that does not decode or exceeds `max_length`); `*error`
/// names host:port and the cause. The reply's own code is not interpreted.
MC_INTERNAL Result<RpcReply> rpc_call(const std::string& host, uint16_t port, uint16_t code,
                                      std::string_view payload, size_t max_length,
                                      std::chrono::nanoseconds timeout, std::string* error);

/// The status a reply's error code stands for (Rejected for one out of range).
MC_INTERNAL Status reply_status(uint16_t code);

/// Splits "host:port" (port required): a host name, an IPv4 address, or an
/// IPv6 address in brackets ("[::1]:15001", the host then without them);
/// InvalidParam when malformed.
MC_INTERNAL Result<std::pair<std::string, uint16_t>> split_host_port(std::string_view text);

/// "host:port", with the host in brackets when it is an IPv6 address.
MC_INTERNAL std::string join_host_port(const std::string& host, uint16_t port);

}  // namespace mc::te
