// SPDX-License-Identifier: Apache-2.0
// RC addresses, connection messages and the out-of-band sockets.
#include "uct/ib/rc/rc_wire.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "ucs/datastruct/wire.h"
#include "ucs/log/log.h"

namespace mc::uct::ib::rc {

namespace {

constexpr uint32_t kConnMagic = 0x4352434d;  // "MCRC"

void put_dev(ucs::WireWriter& w, const DeviceAddr& a) {
  w.u8(a.link_layer);
  w.u16(a.lid);
  w.u64(a.guid);
  w.bytes(a.gid.raw, 16);
}

DeviceAddr get_dev(ucs::WireReader& r) {
  DeviceAddr a;
  a.link_layer = r.u8();
  a.lid = r.u16();
  a.guid = r.u64();
  std::span<const uint8_t> g = r.bytes(16);
  if (g.size() == 16) std::memcpy(a.gid.raw, g.data(), 16);
  return a;
}

ucs::Status bad(std::string* why, const std::string& text) {
  if (why) *why = text;
  return ucs::Status::BadData;
}

}  // namespace

std::vector<uint8_t> pack(const DeviceAddr& a) {
  std::vector<uint8_t> out;
  ucs::WireWriter w(&out);
  w.u8(kWireVersion);
  put_dev(w, a);
  return out;
}

ucs::Result<DeviceAddr> unpack_device_addr(std::span<const uint8_t> in, std::string* why) {
  if (in.size() != kDeviceAddrLen) return bad(why, "rc device address of wrong length");
  ucs::WireReader r(in);
  if (r.u8() != kWireVersion) return bad(why, "rc device address of another version");
  return get_dev(r);
}

std::vector<uint8_t> pack(const IfaceAddr& a) {
  std::vector<uint8_t> out;
  ucs::WireWriter w(&out);
  w.u8(kWireVersion);
  w.bytes(&a.ipv4, 4);
  w.u16(a.port);
  return out;
}

ucs::Result<IfaceAddr> unpack_iface_addr(std::span<const uint8_t> in, std::string* why) {
  if (in.size() != kIfaceAddrLen) return bad(why, "rc iface address of wrong length");
  ucs::WireReader r(in);
  if (r.u8() != kWireVersion) return bad(why, "rc iface address of another version");
  IfaceAddr a;
  std::memcpy(&a.ipv4, r.bytes(4).data(), 4);
  a.port = r.u16();
  if (a.port == 0) return bad(why, "rc iface address with port 0");
  return a;
}

std::vector<uint8_t> pack_framed(const ConnMsg& m) {
  std::vector<uint8_t> out;
  ucs::WireWriter w(&out);
  w.u32(0);  // body length, set below
  w.u32(kConnMagic);
  w.u8(kWireVersion);
  w.u8(static_cast<uint8_t>(m.qps.size()));
  w.u16(m.mtu);
  put_dev(w, m.dev);
  for (const QpInfo& q : m.qps) {
    w.u32(q.qpn);
    w.u32(q.psn);
  }
  const uint32_t len = static_cast<uint32_t>(out.size() - 4);
  ucs::store_le(out.data(), len, 4);
  return out;
}

ucs::Result<ConnMsg> unpack_conn_msg(std::span<const uint8_t> body, std::string* why) {
  ucs::WireReader r(body);
  if (r.u32() != kConnMagic) return bad(why, "rc connection message with a bad magic");
  if (r.u8() != kWireVersion) return bad(why, "rc connection message of another version");
  ConnMsg m;
  const size_t count = r.u8();
  m.mtu = r.u16();
  m.dev = get_dev(r);
  if (count == 0 || count > kMaxQpPerEp) return bad(why, "rc connection message qp count");
  for (size_t i = 0; i < count; ++i) {
    QpInfo q;
    q.qpn = r.u32();
    q.psn = r.u32() & 0xffffff;
    m.qps.push_back(q);
  }
  if (!r.at_end()) return bad(why, "rc connection message truncated or too long");
  return m;
}

ucs::Status FrameReader::read(int fd) {
  for (;;) {
    size_t want = 4;
    if (buf_.size() >= 4) {
      const auto len = static_cast<uint32_t>(ucs::load_le(buf_.data(), 4));
      if (len > kMaxConnMsg) return ucs::Status::BadData;
      want = 4 + len;
    }
    if (buf_.size() == want && want > 4) return ucs::Status::Ok;
    uint8_t tmp[kMaxConnMsg + 4];
    const ssize_t n = ::recv(fd, tmp, want - buf_.size(), 0);
    if (n == 0) return ucs::Status::ConnectionReset;
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) return ucs::Status::InProgress;
      if (errno == EINTR) continue;
      return ucs::Status::ConnectionReset;
    }
    buf_.insert(buf_.end(), tmp, tmp + n);
  }
}

ucs::Result<int> oob_listen(uint16_t* port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    MC_LOG(error) << "rc: socket: " << std::strerror(errno);
    return ucs::Status::IoError;
  }
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_ANY);
  socklen_t len = sizeof(sa);
  if (bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0 || listen(fd, 128) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len) != 0) {
    MC_LOG(error) << "rc: listening socket: " << std::strerror(errno);
    close(fd);
    return ucs::Status::IoError;
  }
  *port = ntohs(sa.sin_port);
  return fd;
}

ucs::Result<int> oob_connect(const IfaceAddr& addr) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    MC_LOG(error) << "rc: socket: " << std::strerror(errno);
    return ucs::Status::IoError;
  }
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = addr.ipv4;
  sa.sin_port = htons(addr.port);
  if (connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0) {
    char ip[INET_ADDRSTRLEN] = {};
    inet_ntop(AF_INET, &addr.ipv4, ip, sizeof(ip));
    MC_LOG(error) << "rc: connect to " << ip << ":" << addr.port << ": " << std::strerror(errno);
    close(fd);
    return ucs::Status::Unreachable;
  }
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  return fd;
}

ucs::Status oob_send(int fd, const std::vector<uint8_t>& data) {
  size_t off = 0;
  while (off < data.size()) {
    const ssize_t n = ::send(fd, data.data() + off, data.size() - off, MSG_NOSIGNAL);
    if (n > 0) {
      off += static_cast<size_t>(n);
    } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
      pollfd p{fd, POLLOUT, 0};
      poll(&p, 1, 100);
    } else {
      MC_LOG(error) << "rc: send on the connection socket: " << std::strerror(errno);
      return ucs::Status::ConnectionReset;
    }
  }
  return ucs::Status::Ok;
}

ucs::Result<uint32_t> oob_address(const std::string& knob, const ibv_gid& gid) {
  if (knob != "auto") {
    in_addr a{};
    if (inet_pton(AF_INET, knob.c_str(), &a) != 1) {
      MC_LOG(error) << "MC_RC_OOB_ADDR='" << knob << "' is not an IPv4 address";
      return ucs::Status::InvalidParam;
    }
    return a.s_addr;
  }
  static const uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (std::memcmp(gid.raw, kMapped, 12) == 0) {
    uint32_t ip;
    std::memcpy(&ip, gid.raw + 12, 4);
    return ip;
  }
  uint32_t found = htonl(INADDR_LOOPBACK);
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) == 0) {
    for (ifaddrs* i = list; i; i = i->ifa_next) {
      if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || (i->ifa_flags & IFF_LOOPBACK) ||
          !(i->ifa_flags & IFF_UP)) {
        continue;
      }
      found = reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr.s_addr;
      break;
    }
    freeifaddrs(list);
  }
  return found;
}

}  // namespace mc::uct::ib::rc
