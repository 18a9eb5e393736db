// SPDX-License-Identifier: Apache-2.0
// sm endpoint operations.
#include "uct/sm/sm_ep.h"

#include <cstring>

#include "ucs/log/log.h"
#include "uct/sm/sm_cma.h"
#include "uct/sm/sm_rma_fallback.h"

namespace mc::uct::sm {

SmEp::SmEp(SmIface* iface, PeerRing* peer)
    : iface_(iface),
      peer_(peer),
      max_short_(iface->fallback().fragment_size()),
      cma_(iface->config().cma) {
  ++peer_->refs;
}

SmEp::~SmEp() {
  iface_->fallback().fail_ep(this, Status::Canceled);
  complete_flushes(Status::Canceled);
  --peer_->refs;
  iface_->ep_destroyed(this);
}

Status SmEp::can_send() const {
  if (failed_ != Status::Ok) return failed_;
  if (!tx_ops_.empty() || (!pending_.empty() && !in_dispatch_)) return Status::NoResource;
  return Status::Ok;
}

Status SmEp::direct(bool write, const SmRkey& key, const iovec* iov, size_t count,
                    uint64_t remote_addr, size_t total) {
  if (key.kind() == RkeyKind::Shm || key.pid() == static_cast<uint32_t>(iface_->id().pid)) {
    // Mapped segment, or our own memory: a plain copy.
    uint8_t* remote = key.kind() == RkeyKind::Shm ? key.mapped(remote_addr)
                                                  : reinterpret_cast<uint8_t*>(remote_addr);
    for (size_t i = 0; i < count; ++i) {
      if (iov[i].iov_len == 0) continue;
      if (write) {
        std::memcpy(remote, iov[i].iov_base, iov[i].iov_len);
      } else {
        std::memcpy(iov[i].iov_base, remote, iov[i].iov_len);
      }
      remote += iov[i].iov_len;
    }
    return Status::Ok;
  }
  if (!cma_) return Status::Unsupported;
  const Status s = cma_copy(static_cast<pid_t>(key.pid()), write, iov, count, remote_addr, total);
  if (s == Status::Unsupported) {
    cma_ = false;  // refused once: every later operation goes through the ring
  } else if (s == Status::ConnectionReset && key.pid() == peer_->id().pid) {
    fail(s);
  }
  return s;
}

Status SmEp::rma(bool write, const Iov* iov, size_t count, uint64_t remote_addr, const Rkey& rkey,
                 UnpackCallback unpack, void* arg, Completion* comp, bool buffered) {
  MC_RETURN_IF_ERROR(can_send());
  if (count > kMaxIov) {
    MC_LOG(error) << "sm: " << count << " iov entries; at most " << kMaxIov;
    return Status::InvalidParam;
  }
  const SmRkey* key = sm_rkey(rkey);
  if (!key) [[unlikely]] {
    MC_LOG(error) << "sm: rkey was not unpacked by the sm memory domain";
    return Status::InvalidParam;
  }
  const size_t total = count == 1 ? iov[0].length : iov_length(iov, count);
  MC_RETURN_IF_ERROR(
      key->check(remote_addr, total, write ? kAccessRemoteWrite : kAccessRemoteRead));
  if (total == 0) {
    if (unpack) unpack(arg, iface_->bounce(), 0);
    return Status::Ok;
  }
  if (count == 1 && key->kind() == RkeyKind::Shm) {
    // One piece of a mapped segment (sm-allocated memory, what small puts
    // and gets usually reach): direct()'s copy without the iovec array.
    copy_mapped(write, *key, remote_addr, iov[0].buffer, total);
    if (unpack) unpack(arg, iov[0].buffer, total);
    return Status::Ok;
  }
  iovec local[kMaxIov];
  for (size_t i = 0; i < count; ++i) local[i] = iovec{iov[i].buffer, iov[i].length};
  const Status s = direct(write, *key, local, count, remote_addr, total);
  if (s != Status::Unsupported) {
    if (s == Status::Ok && unpack) unpack(arg, iov[0].buffer, total);
    return s;
  }
  if (key->pid() != peer_->id().pid) {
    MC_LOG(error) << "sm: without CMA, memory of process " << key->pid()
                  << " is reachable only through an endpoint to it, not to process "
                  << peer_->id().pid;
    return Status::Unsupported;
  }
  return iface_->fallback().start(this, write, key->info().reg_id, iov, count, total, remote_addr,
                                  unpack, arg, comp, buffered);
}

Status SmEp::put_short(const void* buffer, size_t length, uint64_t remote_addr, const Rkey& rkey) {
  if (length > max_short_) {
    MC_LOG(error) << "sm: put_short of " << length << " bytes; at most " << max_short_;
    return Status::InvalidParam;
  }
  // The common case, rma()'s checks and copy for it in line: a key of a
  // mapped segment, an endpoint that may send now.
  const SmRkey* key = sm_rkey(rkey);
  if (key && key->kind() == RkeyKind::Shm && can_send() == Status::Ok) {
    MC_RETURN_IF_ERROR(key->check(remote_addr, length, kAccessRemoteWrite));
    copy_mapped(true, *key, remote_addr, const_cast<void*>(buffer), length);
    return Status::Ok;
  }
  const Iov iov{const_cast<void*>(buffer), length, nullptr};
  return rma(true, &iov, 1, remote_addr, rkey, nullptr, nullptr, nullptr, true);
}

Result<size_t> SmEp::put_bcopy(PackCallback pack, void* arg, uint64_t remote_addr,
                               const Rkey& rkey) {
  MC_RETURN_IF_ERROR(can_send());
  const size_t length = pack(iface_->bounce(), arg);
  if (length > iface_->fallback().fragment_size()) {
    MC_LOG(error) << "sm: put_bcopy packed " << length << " bytes; at most "
                  << iface_->fallback().fragment_size();
    return Status::InvalidParam;
  }
  const Iov iov{iface_->bounce(), length, nullptr};
  MC_RETURN_IF_ERROR(rma(true, &iov, 1, remote_addr, rkey, nullptr, nullptr, nullptr, true));
  return length;
}

Status SmEp::put_zcopy(const Iov* iov, size_t iov_count, uint64_t remote_addr, const Rkey& rkey,
                       Completion* comp) {
  return rma(true, iov, iov_count, remote_addr, rkey, nullptr, nullptr, comp, false);
}

Status SmEp::get_bcopy(UnpackCallback unpack, void* arg, size_t length, uint64_t remote_addr,
                       const Rkey& rkey, Completion* comp) {
  if (length > iface_->fallback().fragment_size()) {
    MC_LOG(error) << "sm: get_bcopy of " << length << " bytes; at most "
                  << iface_->fallback().fragment_size();
    return Status::InvalidParam;
  }
  const Iov iov{iface_->bounce(), length, nullptr};
  return rma(false, &iov, 1, remote_addr, rkey, unpack, arg, comp, false);
}

Status SmEp::get_zcopy(const Iov* iov, size_t iov_count, uint64_t remote_addr, const Rkey& rkey,
                       Completion* comp) {
  return rma(false, iov, iov_count, remote_addr, rkey, nullptr, nullptr, comp, false);
}

Status SmEp::am_short(uint8_t id, uint64_t header, const void* payload, size_t length) {
  MC_RETURN_IF_ERROR(can_send());
  if (id >= kAmIdMax || sizeof(header) + length > iface_->capacity()) {
    MC_LOG(error) << "sm: am_short id " << unsigned(id) << " of " << sizeof(header) + length
                  << " bytes; ids < " << kAmIdMax << ", at most " << iface_->capacity() << " bytes";
    return Status::InvalidParam;
  }
  const auto* p = static_cast<const uint8_t*>(payload);
  const bool sent = peer_->send(
      kMsgAm, id, {{reinterpret_cast<const uint8_t*>(&header), sizeof(header)}, {p, length}});
  return sent ? Status::Ok : Status::NoResource;
}

Result<size_t> SmEp::am_bcopy(uint8_t id, PackCallback pack, void* arg) {
  MC_RETURN_IF_ERROR(can_send());
  if (id >= kAmIdMax) {
    MC_LOG(error) << "sm: active message id " << unsigned(id) << " out of range";
    return Status::InvalidParam;
  }
  Ring::Claim c;
  if (!peer_->claim(&c)) return Status::NoResource;
  // Packed straight into the slot: no bounce copy.
  const size_t length = pack(c.payload(), arg);
  if (length > iface_->capacity()) {
    peer_->publish(c, kMsgNop, 0, 0);  // a claimed slot must be published
    MC_LOG(error) << "sm: am_bcopy packed " << length << " bytes into a " << iface_->capacity()
                  << "-byte slot";
    return Status::InvalidParam;
  }
  peer_->publish(c, kMsgAm, id, static_cast<uint32_t>(length));
  return length;
}

Status SmEp::am_zcopy(uint8_t id, const void* header, size_t header_length, const Iov* iov,
                      size_t iov_count, Completion*) {
  MC_RETURN_IF_ERROR(can_send());
  const size_t total = header_length + iov_length(iov, iov_count);
  if (id >= kAmIdMax || header_length > kMaxAmHeader || iov_count > kMaxIov ||
      total > iface_->capacity()) {
    MC_LOG(error) << "sm: am_zcopy id " << unsigned(id) << " with a " << header_length
                  << "-byte header and " << total << " bytes in " << iov_count
                  << " pieces does not fit a slot";
    return Status::InvalidParam;
  }
  Ring::Claim c;
  if (!peer_->claim(&c)) return Status::NoResource;
  // sm copies even "zero-copy" active messages into the ring, so the
  // user's buffers are free on return and the completion is not used.
  uint8_t* p = c.payload();
  if (header_length) std::memcpy(p, header, header_length);
  p += header_length;
  for (size_t i = 0; i < iov_count; ++i) {
    if (iov[i].length) std::memcpy(p, iov[i].buffer, iov[i].length);
    p += iov[i].length;
  }
  peer_->publish(c, kMsgAm, id, static_cast<uint32_t>(total));
  return Status::Ok;
}

Status SmEp::flush(Completion* comp) {
  if (failed_ != Status::Ok) return failed_;
  if (outstanding_ == 0) return std::exchange(flush_status_, Status::Ok);
  if (comp) flush_waiters_.push_back(comp);
  return Status::InProgress;
}

void SmEp::op_done(Status status) {
  if (is_error(status) && flush_status_ == Status::Ok) flush_status_ = status;
  if (--outstanding_ == 0) complete_flushes(std::exchange(flush_status_, Status::Ok));
}

void SmEp::complete_flushes(Status status) {
  for (Completion* comp : std::exchange(flush_waiters_, {})) completion_update(comp, status);
}

Status SmEp::pending_add(PendingReq* req) {
  if (failed_ != Status::Ok) return failed_;
  if (!busy() && peer_->ring().has_space()) return Status::Busy;
  pending_.push(req);
  iface_->schedule(this);
  return Status::Ok;
}

void SmEp::pending_purge(const std::function<void(PendingReq*)>& cb) {
  pending_.purge(cb);
}

Status SmEp::check() {
  if (failed_ == Status::Ok && !peer_->alive()) fail(Status::ConnectionReset);
  return Status::Ok;
}

void SmEp::fail(Status status) {
  if (failed_ != Status::Ok) return;
  failed_ = status;
  iface_->note_failure();
}

bool SmEp::take_unreported_failure() {
  if (failed_ == Status::Ok || reported_) return false;
  reported_ = true;
  return true;
}

unsigned SmEp::dispatch() {
  unsigned n = 0;
  if (failed_ == Status::Ok) n += iface_->fallback().push(this);
  // Pending requests of a failed endpoint run only after its failure was
  // reported (the handler may purge them); then they see the error.
  if (!tx_ops_.empty() || (failed_ != Status::Ok && !reported_)) return n;
  if (pending_.empty() || (failed_ == Status::Ok && !peer_->ring().has_space())) return n;
  in_dispatch_ = true;
  n += pending_.dispatch();
  in_dispatch_ = false;
  return n;
}

}  // namespace mc::uct::sm
