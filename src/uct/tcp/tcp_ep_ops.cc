// SPDX-License-Identifier: Apache-2.0
// tcp endpoint operations: each builds frames (bounce buffers for short and
// bcopy, the user's iovecs for zcopy) and hands them to a connection.
#include <algorithm>
#include <cstring>

#include "ucs/log/log.h"
#include "uct/tcp/tcp_ep.h"
#include "uct/tcp/tcp_iface.h"

namespace mc::uct::tcp {

uint32_t slice_iov(const Iov* iov, size_t count, size_t offset, size_t length, iovec* out) {
  uint32_t n = 0;
  for (size_t i = 0; i < count && length > 0; ++i) {
    if (offset >= iov[i].length) {
      offset -= iov[i].length;
      continue;
    }
    const size_t k = std::min(length, iov[i].length - offset);
    out[n++] = iovec{static_cast<uint8_t*>(iov[i].buffer) + offset, k};
    length -= k;
    offset = 0;
  }
  return n;
}

Result<const TcpRkey*> TcpEp::check_rkey(const Rkey& rkey, uint64_t addr, size_t length,
                                         unsigned access) const {
  const auto* key = dynamic_cast<const TcpRkey*>(&rkey);
  if (!key) {
    MC_LOG(error) << "tcp: rkey was not unpacked by the tcp memory domain";
    return Status::InvalidParam;
  }
  if (!key->allows(addr, length, access)) {
    MC_LOG(error) << "tcp: remote " << (access & kAccessRemoteWrite ? "write" : "read") << " of [0x"
                  << std::hex << addr << ", +" << std::dec << length << ") is outside what rkey "
                  << key->payload.id << " allows";
    return Status::InvalidParam;
  }
  return key;
}

namespace {

/// The largest put piece that may wait for the loop's next wait with the
/// ones after it (TcpConn::send_locked). Held, 64 KiB writes over tcp in TE
/// batches of 128 moved 1.76x (one thread) and 1.64x (two); 1 MiB ones
/// 1.01x and 0.94x, where a frame's own system call is cheap beside its
/// copy (docs/performance.md).
constexpr size_t kHeldPutMax = 64 * 1024;

}  // namespace

Status TcpEp::post_rma(TcpRequest* req, wire::Op op, const Iov* iov, size_t iov_count, size_t total,
                       uint64_t remote_addr, const TcpRkey& key, void* bounce) {
  const size_t n_conns = conns_.size();
  size_t parts = 1;
  if (!bounce && total > iface_->config().stripe_thresh && n_conns > 1) parts = n_conns;
  const size_t part = (total + parts - 1) / parts;
  parts = (total + part - 1) / part;
  req->parts_left = static_cast<int>(parts);
  req->striped = parts > 1;

  std::lock_guard guard(lock_);
  if (failed_ != Status::Ok) return failed_;
  for (size_t i = 0; i < parts; ++i) {
    const size_t offset = i * part;
    const size_t length = std::min(part, total - offset);
    const uint64_t id = next_req_id_++;
    Piece* piece = inflight_.insert(id, Piece{req, offset, length, static_cast<uint32_t>(i)});
    wire::FrameHeader h;
    h.op = op;
    h.remote_addr = remote_addr + offset;
    h.region_id = key.payload.id;
    h.region_key = key.payload.key;
    h.req_id = id;
    if (op == wire::Op::Put) {
      h.length = static_cast<uint32_t>(length);
    } else {
      h.get_length = static_cast<uint32_t>(length);
    }
    TxFrame frame(h);
    frame.piece = id;
    frame.burst = op == wire::Op::GetReq || length <= kHeldPutMax;
    if (op == wire::Op::Put) {
      iovec vec[kMaxIov];
      const uint32_t k = slice_iov(iov, iov_count, offset, length, vec);
      for (uint32_t j = 0; j < k; ++j) frame.add(vec[j].iov_base, vec[j].iov_len);
      frame.bounce = bounce;
    }
    // Written at once: the bounce buffer is free; the piece waits for its reply.
    if (i == 0 ? send_primary_locked(frame) : conns_[i]->send_locked(frame)) {
      release_bounce(frame.bounce);
      piece->sent = true;
    }
  }
  return Status::Ok;
}

Status TcpEp::post_am(TxFrame& frame, Completion* comp, bool on_stack) {
  // Taken before the frame can be queued, which needs it; given back when
  // the frame goes out at once.
  TcpRequest* req = iface_->new_request(TcpRequest::Kind::Am, this, comp);
  if (!req) {
    release_bounce(frame.bounce);
    return Status::NoMemory;
  }
  std::lock_guard guard(lock_);
  if (failed_ != Status::Ok) {
    release_bounce(frame.bounce);
    iface_->free_request(req);
    return failed_;
  }
  if (send_primary_locked(frame)) {
    release_bounce(frame.bounce);
    iface_->free_request(req);
    return Status::Ok;
  }
  // A send failing on the loop thread fails the endpoint at once, which
  // released the queued frame (its bounce buffer too).
  if (failed_ != Status::Ok) {
    iface_->free_request(req);
    return failed_;
  }
  // Queued (at the back): it completes when sent, and may not read the
  // caller's stack after we return.
  TxFrame& queued = share_ == ShareState::Settled ? conns_[0]->tx_locked().back() : waiting_.back();
  if (on_stack) queued.keep_rest();
  queued.req = req;
  track(req);
  return Status::InProgress;
}

Status TcpEp::put_short(const void* buffer, size_t length, uint64_t remote_addr, const Rkey& rkey) {
  if (!iface_) return Status::Canceled;
  if (length > std::min(kMaxShort, iface_->config().seg_size)) return Status::InvalidParam;
  struct Src {
    const void* p;
    size_t n;
  } src{buffer, length};
  auto r = put_bcopy(
      [](void* dest, void* arg) {
        auto* s = static_cast<Src*>(arg);
        if (s->n) std::memcpy(dest, s->p, s->n);
        return s->n;
      },
      &src, remote_addr, rkey);
  return r.ok() ? Status::Ok : r.status();
}

Result<size_t> TcpEp::put_bcopy(PackCallback pack, void* arg, uint64_t remote_addr,
                                const Rkey& rkey) {
  MC_RETURN_IF_ERROR(admit());
  void* bounce = iface_->bounce_pool().get();
  if (!bounce) return Status::NoResource;
  const size_t length = pack(bounce, arg);
  const size_t seg = iface_->config().seg_size;
  auto key = length > seg ? Result<const TcpRkey*>(Status::InvalidParam)
                          : check_rkey(rkey, remote_addr, length, kAccessRemoteWrite);
  if (!key.ok() || length == 0) {
    release_bounce(bounce);
    if (length > seg) MC_LOG(error) << "tcp: put_bcopy packed " << length << " > " << seg;
    return key.ok() ? Result<size_t>(size_t{0}) : key.status();
  }
  TcpRequest* req = iface_->new_request(TcpRequest::Kind::Put, this, nullptr);
  if (!req) {
    release_bounce(bounce);
    return Status::NoMemory;
  }
  const Iov iov{bounce, length, nullptr};
  const Status s = post_rma(req, wire::Op::Put, &iov, 1, length, remote_addr, **key, bounce);
  if (is_error(s)) {
    release_bounce(bounce);
    iface_->free_request(req);
    return s;
  }
  track(req);
  return length;
}

Status TcpEp::put_zcopy(const Iov* iov, size_t iov_count, uint64_t remote_addr, const Rkey& rkey,
                        Completion* comp) {
  const size_t total = iov_length(iov, iov_count);
  if (iov_count > kMaxIov || total > kMaxZcopy) return Status::InvalidParam;
  MC_ASSIGN_OR_RETURN(const TcpRkey* key, check_rkey(rkey, remote_addr, total, kAccessRemoteWrite));
  if (total == 0) return Status::Ok;
  MC_RETURN_IF_ERROR(admit());
  TcpRequest* req = iface_->new_request(TcpRequest::Kind::Put, this, comp);
  if (!req) return Status::NoMemory;
  const Status s = post_rma(req, wire::Op::Put, iov, iov_count, total, remote_addr, *key, nullptr);
  if (is_error(s)) {
    iface_->free_request(req);
    return s;
  }
  track(req);
  return Status::InProgress;
}

Status TcpEp::get_bcopy(UnpackCallback unpack, void* arg, size_t length, uint64_t remote_addr,
                        const Rkey& rkey, Completion* comp) {
  if (iface_ && length > iface_->config().seg_size) return Status::InvalidParam;
  MC_RETURN_IF_ERROR(admit());
  MC_ASSIGN_OR_RETURN(const TcpRkey* key, check_rkey(rkey, remote_addr, length, kAccessRemoteRead));
  if (length == 0) {
    unpack(arg, nullptr, 0);
    return Status::Ok;
  }
  void* bounce = iface_->bounce_pool().get();
  if (!bounce) return Status::NoResource;
  TcpRequest* req = iface_->new_request(TcpRequest::Kind::Get, this, comp);
  if (!req) {
    release_bounce(bounce);
    return Status::NoMemory;
  }
  req->bounce = bounce;
  req->unpack = unpack;
  req->unpack_arg = arg;
  req->length = length;
  req->iov[0] = Iov{bounce, length, nullptr};
  req->iov_count = 1;
  // `bounce` tells post_rma not to split; the buffer belongs to the request.
  const Status s = post_rma(req, wire::Op::GetReq, nullptr, 0, length, remote_addr, *key, bounce);
  if (is_error(s)) {
    release_bounce(bounce);
    iface_->free_request(req);
    return s;
  }
  track(req);
  return Status::InProgress;
}

Status TcpEp::get_zcopy(const Iov* iov, size_t iov_count, uint64_t remote_addr, const Rkey& rkey,
                        Completion* comp) {
  const size_t total = iov_length(iov, iov_count);
  if (iov_count > kMaxIov || total > kMaxZcopy) return Status::InvalidParam;
  MC_ASSIGN_OR_RETURN(const TcpRkey* key, check_rkey(rkey, remote_addr, total, kAccessRemoteRead));
  if (total == 0) return Status::Ok;
  MC_RETURN_IF_ERROR(admit());
  TcpRequest* req = iface_->new_request(TcpRequest::Kind::Get, this, comp);
  if (!req) return Status::NoMemory;
  std::copy(iov, iov + iov_count, req->iov.begin());
  req->iov_count = iov_count;
  const Status s = post_rma(req, wire::Op::GetReq, nullptr, 0, total, remote_addr, *key, nullptr);
  if (is_error(s)) {
    iface_->free_request(req);
    return s;
  }
  track(req);
  return Status::InProgress;
}

Status TcpEp::am_short(uint8_t id, uint64_t header, const void* payload, size_t length) {
  if (!iface_) return Status::Canceled;
  if (id >= kAmIdMax || sizeof(header) + length > std::min(kMaxShort, iface_->config().seg_size)) {
    return Status::InvalidParam;
  }
  MC_RETURN_IF_ERROR(admit());
  // Sent from here; copied only if the socket does not take it at once.
  uint8_t buf[kMaxShort];
  // The 8-byte header travels little-endian, like every wire field.
  ucs::store_le(buf, header, 8);
  if (length) std::memcpy(buf + 8, payload, length);
  wire::FrameHeader h;
  h.op = wire::Op::Am;
  h.am_id = id;
  h.length = static_cast<uint32_t>(8 + length);
  TxFrame frame(h);
  frame.add(buf, 8 + length);
  const Status s = post_am(frame, nullptr, true);
  return s == Status::InProgress ? Status::Ok : s;
}

Result<size_t> TcpEp::am_bcopy(uint8_t id, PackCallback pack, void* arg) {
  if (id >= kAmIdMax) return Status::InvalidParam;
  MC_RETURN_IF_ERROR(admit());
  void* buf = iface_->bounce_pool().get();
  if (!buf) return Status::NoResource;
  const size_t length = pack(buf, arg);
  if (length > iface_->config().seg_size) {
    MC_LOG(error) << "tcp: am_bcopy packed " << length << " bytes, more than SEG_SIZE "
                  << iface_->config().seg_size;
    release_bounce(buf);
    return Status::InvalidParam;
  }
  wire::FrameHeader h;
  h.op = wire::Op::Am;
  h.am_id = id;
  h.length = static_cast<uint32_t>(length);
  TxFrame frame(h);
  frame.add(buf, length);
  frame.bounce = buf;
  MC_RETURN_IF_ERROR(post_am(frame, nullptr));
  return length;
}

Status TcpEp::am_zcopy(uint8_t id, const void* header, size_t header_length, const Iov* iov,
                       size_t iov_count, Completion* comp) {
  if (!iface_) return Status::Canceled;
  const size_t total = header_length + iov_length(iov, iov_count);
  if (id >= kAmIdMax || header_length > kMaxAmHeader || iov_count > kMaxIov ||
      total > iface_->config().seg_size) {
    return Status::InvalidParam;
  }
  MC_RETURN_IF_ERROR(admit());
  wire::FrameHeader h;
  h.op = wire::Op::Am;
  h.am_id = id;
  h.length = static_cast<uint32_t>(total);
  TxFrame frame(h);
  if (header_length) {
    // The header is the caller's only until we return: copy it.
    void* buf = iface_->bounce_pool().get();
    if (!buf) return Status::NoResource;
    std::memcpy(buf, header, header_length);
    frame.add(buf, header_length);
    frame.bounce = buf;
  }
  for (size_t i = 0; i < iov_count; ++i) frame.add(iov[i].buffer, iov[i].length);
  return post_am(frame, comp);
}

}  // namespace mc::uct::tcp
