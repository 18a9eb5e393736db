// SPDX-License-Identifier: Apache-2.0
// self endpoint operations.
#include "uct/self/self_ep.h"

#include <cstring>

#include "ucs/log/log.h"

namespace mc::uct::self {

Result<uint8_t*> SelfEp::target(uint64_t remote_addr, size_t length, const Rkey& rkey,
                                unsigned access) {
  const auto* key = dynamic_cast<const SelfRkey*>(&rkey);
  if (!key) {
    MC_LOG(error) << "self: rkey was not unpacked by the self memory domain";
    return Status::InvalidParam;
  }
  if (length == 0) return reinterpret_cast<uint8_t*>(remote_addr);
  MC_RETURN_IF_ERROR(iface_->self_md().check_access(*key, remote_addr, length, access));
  return reinterpret_cast<uint8_t*>(remote_addr);
}

Status SelfEp::put_short(const void* buffer, size_t length, uint64_t remote_addr,
                         const Rkey& rkey) {
  if (length > iface_->config().seg_size) return Status::InvalidParam;
  MC_ASSIGN_OR_RETURN(uint8_t * dst, target(remote_addr, length, rkey, kAccessRemoteWrite));
  if (length) std::memcpy(dst, buffer, length);
  return Status::Ok;
}

Result<size_t> SelfEp::put_bcopy(PackCallback pack, void* arg, uint64_t remote_addr,
                                 const Rkey& rkey) {
  std::vector<uint8_t> bounce(iface_->config().seg_size);
  const size_t length = pack(bounce.data(), arg);
  if (length > bounce.size()) return Status::InvalidParam;
  MC_ASSIGN_OR_RETURN(uint8_t * dst, target(remote_addr, length, rkey, kAccessRemoteWrite));
  if (length) std::memcpy(dst, bounce.data(), length);
  return length;
}

Status SelfEp::put_zcopy(const Iov* iov, size_t iov_count, uint64_t remote_addr,
                         const Rkey& rkey, Completion*) {
  const size_t total = iov_length(iov, iov_count);
  MC_ASSIGN_OR_RETURN(uint8_t * dst, target(remote_addr, total, rkey, kAccessRemoteWrite));
  for (size_t i = 0; i < iov_count; ++i) {
    if (iov[i].length) std::memcpy(dst, iov[i].buffer, iov[i].length);
    dst += iov[i].length;
  }
  return Status::Ok;
}

Status SelfEp::get_bcopy(UnpackCallback unpack, void* arg, size_t length, uint64_t remote_addr,
                         const Rkey& rkey, Completion*) {
  if (length > iface_->config().seg_size) return Status::InvalidParam;
  MC_ASSIGN_OR_RETURN(uint8_t * src, target(remote_addr, length, rkey, kAccessRemoteRead));
  unpack(arg, src, length);
  return Status::Ok;
}

Status SelfEp::get_zcopy(const Iov* iov, size_t iov_count, uint64_t remote_addr,
                         const Rkey& rkey, Completion*) {
  const size_t total = iov_length(iov, iov_count);
  MC_ASSIGN_OR_RETURN(uint8_t * src, target(remote_addr, total, rkey, kAccessRemoteRead));
  for (size_t i = 0; i < iov_count; ++i) {
    if (iov[i].length) std::memcpy(iov[i].buffer, src, iov[i].length);
    src += iov[i].length;
  }
  return Status::Ok;
}

Status SelfEp::am_short(uint8_t id, uint64_t header, const void* payload, size_t length) {
  if (sizeof(header) + length > iface_->config().seg_size) return Status::InvalidParam;
  if (!iface_->has_room()) return Status::NoResource;
  std::vector<uint8_t> data(sizeof(header) + length);
  std::memcpy(data.data(), &header, sizeof(header));
  if (length) std::memcpy(data.data() + sizeof(header), payload, length);
  return iface_->enqueue_am(id, std::move(data));
}

Result<size_t> SelfEp::am_bcopy(uint8_t id, PackCallback pack, void* arg) {
  if (!iface_->has_room()) return Status::NoResource;
  std::vector<uint8_t> data(iface_->config().seg_size);
  const size_t length = pack(data.data(), arg);
  if (length > data.size()) return Status::InvalidParam;
  data.resize(length);
  MC_RETURN_IF_ERROR(iface_->enqueue_am(id, std::move(data)));
  return length;
}

Status SelfEp::am_zcopy(uint8_t id, const void* header, size_t header_length, const Iov* iov,
                        size_t iov_count, Completion*) {
  const size_t total = header_length + iov_length(iov, iov_count);
  if (header_length > 128 || total > iface_->config().seg_size) return Status::InvalidParam;
  if (!iface_->has_room()) return Status::NoResource;
  std::vector<uint8_t> data(total);
  uint8_t* p = data.data();
  if (header_length) std::memcpy(p, header, header_length);
  p += header_length;
  for (size_t i = 0; i < iov_count; ++i) {
    if (iov[i].length) std::memcpy(p, iov[i].buffer, iov[i].length);
    p += iov[i].length;
  }
  // The payload was copied: the user's buffers are free now.
  return iface_->enqueue_am(id, std::move(data));
}

Status SelfEp::flush(Completion*) { return Status::Ok; }

Status SelfEp::pending_add(PendingReq* req) {
  if (iface_->has_room()) return Status::Busy;
  iface_->pending().push(req);
  return Status::Ok;
}

void SelfEp::pending_purge(const std::function<void(PendingReq*)>& cb) {
  iface_->pending().purge(cb);
}

}  // namespace mc::uct::self
