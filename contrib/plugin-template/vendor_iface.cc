// SPDX-License-Identifier: Apache-2.0
// vendor iface: the socket, accepting peers, framing and serving requests.
#include "vendor_iface.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <ucs/datastruct/wire.h>
#include <ucs/log/log.h>
#include <ucs/sys/sys.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>

#include "vendor_ep.h"

namespace vendor {

namespace {

constexpr size_t kAddrLen = 8;  // u32 pid | u32 iface index
constexpr size_t kReadChunk = 256 * 1024;

// Abstract socket names ("\0mc-vendor-<pid>-<index>") vanish with their
// socket: nothing to clean up in the file system after a crash.
socklen_t socket_name(uint32_t pid, uint32_t index, sockaddr_un* sa) {
  std::memset(sa, 0, sizeof(*sa));
  sa->sun_family = AF_UNIX;
  const int n =
      std::snprintf(sa->sun_path + 1, sizeof(sa->sun_path) - 1, "mc-vendor-%u-%u", pid, index);
  return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + n);
}

}  // namespace

VendorIface::VendorIface(VendorMd* md, VendorConfig config, mc::uct::ErrorHandler on_error)
    : Iface(md), md_(md), config_(config), on_error_(std::move(on_error)) {
  static std::atomic<uint32_t> counter{0};
  pid_ = static_cast<uint32_t>(getpid());
  index_ = ++counter;
}

VendorIface::~VendorIface() {
  for (auto& c : conns_) close(c->fd);
  if (listen_fd_ >= 0) close(listen_fd_);
}

Result<std::unique_ptr<mc::uct::Iface>> VendorIface::create(VendorMd* md, VendorConfig config,
                                                            mc::uct::ErrorHandler on_error) {
  std::unique_ptr<VendorIface> iface(new VendorIface(md, config, std::move(on_error)));
  MC_RETURN_IF_ERROR(iface->listen());
  return std::unique_ptr<mc::uct::Iface>(std::move(iface));
}

Status VendorIface::listen() {
  listen_fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  sockaddr_un sa;
  const socklen_t len = socket_name(pid_, index_, &sa);
  if (listen_fd_ < 0 || bind(listen_fd_, reinterpret_cast<sockaddr*>(&sa), len) != 0 ||
      ::listen(listen_fd_, 256) != 0) {
    MC_LOG(error) << "vendor: cannot listen on mc-vendor-" << pid_ << "-" << index_ << ": "
                  << strerror(errno);
    return Status::IoError;
  }
  return Status::Ok;
}

mc::uct::IfaceAttr VendorIface::query() const {
  using namespace mc::uct;
  IfaceAttr attr;
  attr.cap = kCapAmShort | kCapAmBcopy | kCapAmZcopy | kCapPutShort | kCapPutBcopy | kCapPutZcopy |
             kCapGetBcopy | kCapGetZcopy | kCapPending | kCapConnectToIface |
             kCapErrHandlePeerFailure;
  const size_t seg = config_.seg_size;
  attr.am = OpLimits{seg, seg, 0, seg, 16, 128};
  attr.put = OpLimits{seg, seg, 0, SIZE_MAX, 16, 0};
  attr.get = OpLimits{0, seg, 0, SIZE_MAX, 16, 0};
  attr.latency = LinearFunc{5e-6, 0};    // a socket round through the kernel
  attr.bandwidth = Bandwidth{2.0e9, 0};  // two copies per byte
  attr.overhead = 1e-6;
  attr.priority = 0;
  attr.device_addr_len = 8;
  attr.iface_addr_len = kAddrLen;
  return attr;
}

std::vector<uint8_t> VendorIface::device_address() const {
  std::vector<uint8_t> out;
  mc::ucs::WireWriter(&out).u64(mc::ucs::boot_id_hash());
  return out;
}

std::vector<uint8_t> VendorIface::iface_address() const {
  std::vector<uint8_t> out;
  mc::ucs::WireWriter w(&out);
  w.u32(pid_);
  w.u32(index_);
  return out;
}

bool VendorIface::is_reachable(std::span<const uint8_t> device_addr,
                               std::span<const uint8_t> iface_addr, std::string* reason) const {
  mc::ucs::WireReader dev(device_addr), iface(iface_addr);
  const uint64_t boot = dev.u64();
  (void)iface.u32();
  (void)iface.u32();
  auto say = [reason](const char* why) {
    if (reason) *reason = why;
    return false;
  };
  if (!dev.at_end() || !iface.at_end()) return say("malformed vendor address");
  if (boot != mc::ucs::boot_id_hash()) return say("vendor reaches only this host");
  return true;
}

Result<std::unique_ptr<mc::uct::Endpoint>> VendorIface::ep_create(
    std::span<const uint8_t> device_addr, std::span<const uint8_t> iface_addr) {
  std::string reason;
  if (!is_reachable(device_addr, iface_addr, &reason)) {
    MC_LOG(error) << "vendor: cannot connect: " << reason;
    return Status::Unreachable;
  }
  mc::ucs::WireReader r(iface_addr);
  const uint32_t pid = r.u32(), index = r.u32();
  sockaddr_un sa;
  const socklen_t len = socket_name(pid, index, &sa);
  // A blocking connect: on a local socket it returns once the peer's
  // backlog has the connection, without the peer running progress().
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0 || connect(fd, reinterpret_cast<sockaddr*>(&sa), len) != 0) {
    MC_LOG(error) << "vendor: cannot connect to mc-vendor-" << pid << "-" << index << ": "
                  << strerror(errno);
    if (fd >= 0) close(fd);
    return Status::Unreachable;
  }
  // The socket stays blocking: every send and recv passes MSG_DONTWAIT.
  auto conn = std::make_unique<Conn>();
  conn->fd = fd;
  auto ep = std::make_unique<VendorEp>(this, conn.get());
  conn->owner = ep.get();
  conns_.push_back(std::move(conn));
  return std::unique_ptr<mc::uct::Endpoint>(std::move(ep));
}

void VendorIface::detach(Conn* conn) {
  // Freed by the next progress(): the endpoint may go away inside a
  // completion that progress() is running on this very connection.
  conn->owner = nullptr;
  conn->broken = true;
}

Status VendorIface::flush(mc::uct::Completion* comp) {
  std::vector<VendorEp*> dirty;
  for (auto& c : conns_) {
    if (c->owner && c->owner->dirty()) dirty.push_back(c->owner);
  }
  if (dirty.empty()) return Status::Ok;
  if (!comp) return Status::NoResource;  // nothing to notify: the caller polls
  comp->count += static_cast<int>(dirty.size());
  for (VendorEp* ep : dirty) {
    const Status s = ep->flush(comp);
    if (s != Status::InProgress) mc::uct::completion_update(comp, s);
  }
  // The caller's own count stands for this call: it is done once posted.
  mc::uct::completion_update(comp, Status::Ok);
  return Status::InProgress;
}

Status VendorIface::send(Conn& conn, const FrameHeader& hdr,
                         std::span<const mc::uct::Iov> payload) {
  if (conn.broken) return Status::ConnectionReset;
  // The payload is what `payload` holds: a GetReq's length is what it asks
  // for, not what it carries.
  size_t length = 0;
  for (const mc::uct::Iov& v : payload) length += v.length;
  std::vector<uint8_t> frame(sizeof(hdr) + length);
  std::memcpy(frame.data(), &hdr, sizeof(hdr));
  uint8_t* p = frame.data() + sizeof(hdr);
  for (const mc::uct::Iov& v : payload) {
    if (v.length) std::memcpy(p, v.buffer, v.length);
    p += v.length;
  }
  conn.tx_bytes += frame.size();
  conn.tx.push_back(std::move(frame));
  drain_tx(conn);
  return conn.broken ? Status::ConnectionReset : Status::Ok;
}

unsigned VendorIface::drain_tx(Conn& conn) {
  unsigned sent = 0;
  while (!conn.tx.empty() && !conn.broken) {
    std::vector<uint8_t>& f = conn.tx.front();
    const ssize_t n = ::send(conn.fd, f.data() + conn.tx_off, f.size() - conn.tx_off,
                             MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) break;
      MC_LOG(error) << "vendor: send failed: " << strerror(errno);
      fail(conn, Status::ConnectionReset);
      break;
    }
    conn.tx_off += static_cast<size_t>(n);
    if (conn.tx_off == f.size()) {
      conn.tx_bytes -= f.size();
      conn.tx.pop_front();
      conn.tx_off = 0;
      ++sent;
    }
  }
  return sent;
}

unsigned VendorIface::read_rx(Conn& conn) {
  unsigned events = 0;
  while (!conn.broken) {
    const size_t end = conn.rx.size();
    conn.rx.resize(end + kReadChunk);
    const ssize_t n = recv(conn.fd, conn.rx.data() + end, kReadChunk, MSG_DONTWAIT);
    conn.rx.resize(end + (n > 0 ? static_cast<size_t>(n) : 0));
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
      if (conn.owner) MC_LOG(error) << "vendor: peer closed the connection";
      fail(conn, Status::ConnectionReset);
      break;
    }
    if (n < 0) break;
    // Serve every complete frame; keep a partial one for the next read.
    while (!conn.broken && conn.rx.size() - conn.rx_off >= sizeof(FrameHeader)) {
      FrameHeader hdr;
      std::memcpy(&hdr, conn.rx.data() + conn.rx_off, sizeof(hdr));
      const bool has_payload = hdr.type != kGetReq && hdr.type != kFlushReq;
      const size_t total = sizeof(hdr) + (has_payload ? hdr.length : 0);
      if (conn.rx.size() - conn.rx_off < total) break;
      const uint8_t* payload = conn.rx.data() + conn.rx_off + sizeof(hdr);
      if (conn.owner) {
        conn.owner->on_reply(hdr, payload);
      } else {
        serve(conn, hdr, payload);
      }
      conn.rx_off += total;
      ++events;
    }
    conn.rx.erase(conn.rx.begin(), conn.rx.begin() + static_cast<ptrdiff_t>(conn.rx_off));
    conn.rx_off = 0;
  }
  return events;
}

void VendorIface::serve(Conn& conn, const FrameHeader& hdr, const uint8_t* payload) {
  FrameHeader rep{};
  rep.req = hdr.req;
  Status s = Status::Ok;
  switch (hdr.type) {
    case kAm: (void)invoke_am(hdr.am_id, payload, hdr.length, 0); return;
    case kPut:
      s = md_->check_access(hdr.key, hdr.addr, hdr.length, mc::uct::kAccessRemoteWrite);
      if (s == Status::Ok && hdr.length) {
        std::memcpy(reinterpret_cast<void*>(hdr.addr), payload, hdr.length);
      }
      if (s != Status::Ok && conn.target_error == Status::Ok) conn.target_error = s;
      return;
    case kGetReq: {
      rep.type = kGetRep;
      s = md_->check_access(hdr.key, hdr.addr, hdr.length, mc::uct::kAccessRemoteRead);
      rep.status = static_cast<int32_t>(s);
      rep.length = s == Status::Ok ? hdr.length : 0;
      const mc::uct::Iov data{reinterpret_cast<void*>(hdr.addr), rep.length, nullptr};
      (void)send(conn, rep, {&data, 1});
      return;
    }
    case kFlushReq:
      // The stream is ordered: every request before this one is served.
      rep.type = kFlushRep;
      rep.status = static_cast<int32_t>(conn.target_error);
      conn.target_error = Status::Ok;
      (void)send(conn, rep, {});
      return;
    default:
      MC_LOG(error) << "vendor: unknown frame type " << unsigned(hdr.type) << "; closing";
      fail(conn, Status::BadData);
  }
}

void VendorIface::fail(Conn& conn, Status status) {
  if (conn.broken) return;
  conn.broken = true;
  conn.tx.clear();
  conn.tx_bytes = 0;
  if (conn.owner) {
    conn.owner->on_broken(status);
    if (on_error_) on_error_(conn.owner, status);
  }
}

unsigned VendorIface::progress() {
  accept_all();
  unsigned events = 0;
  for (size_t i = 0; i < conns_.size(); ++i) {
    Conn& c = *conns_[i];
    if (c.broken) continue;
    events += drain_tx(c);
    events += read_rx(c);
  }
  // Accepted connections whose peer is gone are dropped here; an
  // endpoint's connection stays until the endpoint is destroyed.
  std::erase_if(conns_, [](const std::unique_ptr<Conn>& c) {
    if (!c->broken || c->owner) return false;
    close(c->fd);
    return true;
  });
  events += pending_.dispatch();
  return events;
}

void VendorIface::accept_all() {
  for (;;) {
    const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        MC_LOG(error) << "vendor: accept failed: " << strerror(errno);
      }
      return;
    }
    auto conn = std::make_unique<Conn>();
    conn->fd = fd;
    conns_.push_back(std::move(conn));
  }
}

}  // namespace vendor
