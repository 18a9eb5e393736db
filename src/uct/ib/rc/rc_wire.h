// SPDX-License-Identifier: Apache-2.0
// What RC peers exchange: the device and iface addresses, and the
// connection messages carrying queue pair numbers over the out-of-band
// TCP connection (the part the IB CM or rdma_cm does elsewhere).
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "ucs/status/status.h"

namespace mc::uct::ib::rc {

inline constexpr uint8_t kWireVersion = 1;
inline constexpr size_t kMaxQpPerEp = 16;

/// Device address: u8 version | u8 link layer | u16 lid | u64 guid | gid[16]
struct DeviceAddr {
  uint8_t link_layer = 0;
  uint16_t lid = 0;
  uint64_t guid = 0;
  ibv_gid gid{};
};
inline constexpr size_t kDeviceAddrLen = 1 + 1 + 2 + 8 + 16;
std::vector<uint8_t> pack(const DeviceAddr& a);
/// BadData (with `why`) for a wrong length or version.
ucs::Result<DeviceAddr> unpack_device_addr(std::span<const uint8_t> in, std::string* why);

/// Iface address: u8 version | u32 IPv4 (network order) | u16 TCP port
struct IfaceAddr {
  uint32_t ipv4 = 0;
  uint16_t port = 0;
};
inline constexpr size_t kIfaceAddrLen = 1 + 4 + 2;
std::vector<uint8_t> pack(const IfaceAddr& a);
ucs::Result<IfaceAddr> unpack_iface_addr(std::span<const uint8_t> in, std::string* why);

struct QpInfo {
  uint32_t qpn = 0;
  uint32_t psn = 0;
};

/// Connection request and reply, framed by a u32 body length:
///   u32 magic "MCRC" | u8 version | u8 qp count | u16 mtu | DeviceAddr fields |
///   count x (u32 qpn | u32 psn)                               (little-endian)
struct ConnMsg {
  DeviceAddr dev;
  uint16_t mtu = 0;
  std::vector<QpInfo> qps;
};
std::vector<uint8_t> pack_framed(const ConnMsg& m);
/// Decodes a body (without its length); BadData naming the fault.
ucs::Result<ConnMsg> unpack_conn_msg(std::span<const uint8_t> body, std::string* why);
inline constexpr size_t kMaxConnMsg = 4 + 1 + 1 + 2 + kDeviceAddrLen + kMaxQpPerEp * 8;

/// Accumulates one framed message from a non-blocking socket.
class FrameReader {
 public:
  /// Ok when a whole message is in body(), InProgress when more is due,
  /// ConnectionReset on EOF or a socket error, BadData for a length out of range.
  ucs::Status read(int fd);
  std::span<const uint8_t> body() const { return {buf_.data() + 4, buf_.size() - 4}; }

 private:
  std::vector<uint8_t> buf_;
};

/// A listening TCP socket on any address; the port chosen is in `*port`.
ucs::Result<int> oob_listen(uint16_t* port);
/// A connected, non-blocking TCP socket to `addr`.
ucs::Result<int> oob_connect(const IfaceAddr& addr);
/// Writes all of `data` (blocking briefly on a full socket). ConnectionReset on failure.
ucs::Status oob_send(int fd, const std::vector<uint8_t>& data);
/// The IPv4 (network order) this iface announces: `knob` unless "auto", else
/// the address in an IPv4-mapped `gid`, else the first non-loopback one.
ucs::Result<uint32_t> oob_address(const std::string& knob, const ibv_gid& gid);

}  // namespace mc::uct::ib::rc
