// SPDX-License-Identifier: Apache-2.0
// vendor endpoint operations. The initiator checks the rkey's range and
// access before sending; the target checks again against its live
// registrations and reports a refusal at the next flush.
#include "vendor_ep.h"

#include <ucs/log/log.h>

#include <cstring>

namespace vendor {

using mc::uct::Completion;
using mc::uct::Iov;

namespace {

// The checked key of a remote range, or null (logged).
const VendorRkey* checked_key(const mc::uct::Rkey& rkey, uint64_t addr, size_t len,
                              unsigned access) {
  const auto* key = dynamic_cast<const VendorRkey*>(&rkey);
  if (!key) {
    MC_LOG(error) << "vendor: rkey was not unpacked by the vendor memory domain";
    return nullptr;
  }
  if ((key->region.access & access) != access) {
    MC_LOG(error) << "vendor: region " << key->id << " does not allow remote "
                  << (access & mc::uct::kAccessRemoteWrite ? "write" : "read");
    return nullptr;
  }
  if (len && !region_contains(key->region, addr, len)) {
    MC_LOG(error) << "vendor: access [0x" << std::hex << addr << ", +" << std::dec << len
                  << ") is outside the rkey's region";
    return nullptr;
  }
  return key;
}

}  // namespace

VendorEp::~VendorEp() {
  on_broken(Status::Canceled);
  iface_->detach(conn_);
}

Status VendorEp::put(uint64_t remote_addr, const mc::uct::Rkey& rkey,
                     std::span<const Iov> payload) {
  size_t length = 0;
  for (const Iov& v : payload) length += v.length;
  const VendorRkey* key = checked_key(rkey, remote_addr, length, mc::uct::kAccessRemoteWrite);
  if (!key) return Status::InvalidParam;
  if (!iface_->has_room(*conn_, sizeof(FrameHeader) + length)) return Status::NoResource;
  FrameHeader hdr{};
  hdr.type = kPut;
  hdr.length = length;
  hdr.addr = remote_addr;
  hdr.key = key->id;
  dirty_ = true;
  return iface_->send(*conn_, hdr, payload);
}

Status VendorEp::put_short(const void* buffer, size_t length, uint64_t remote_addr,
                           const mc::uct::Rkey& rkey) {
  if (length > iface_->config().seg_size) return Status::InvalidParam;
  const Iov v{const_cast<void*>(buffer), length, nullptr};
  return put(remote_addr, rkey, {&v, 1});
}

Result<size_t> VendorEp::put_bcopy(mc::uct::PackCallback pack, void* arg, uint64_t remote_addr,
                                   const mc::uct::Rkey& rkey) {
  if (!iface_->has_room(*conn_, sizeof(FrameHeader) + iface_->config().seg_size)) {
    return Status::NoResource;
  }
  std::vector<uint8_t> bounce(iface_->config().seg_size);
  const size_t length = pack(bounce.data(), arg);
  if (length > bounce.size()) return Status::InvalidParam;
  const Iov v{bounce.data(), length, nullptr};
  MC_RETURN_IF_ERROR(put(remote_addr, rkey, {&v, 1}));
  return length;
}

// The payload is copied into the frame, so the user's buffers are free at
// once: Ok, never InProgress. A DMA-capable vendor would return InProgress
// and complete `comp` when the device is done with them.
Status VendorEp::put_zcopy(const Iov* iov, size_t iov_count, uint64_t remote_addr,
                           const mc::uct::Rkey& rkey, Completion*) {
  return put(remote_addr, rkey, {iov, iov_count});
}

Status VendorEp::get(uint64_t remote_addr, size_t length, const mc::uct::Rkey& rkey, Waiting w) {
  const VendorRkey* key = checked_key(rkey, remote_addr, length, mc::uct::kAccessRemoteRead);
  if (!key) return Status::InvalidParam;
  if (!iface_->has_room(*conn_, sizeof(FrameHeader))) return Status::NoResource;
  FrameHeader hdr{};
  hdr.type = kGetReq;
  hdr.length = length;
  hdr.addr = remote_addr;
  hdr.key = key->id;
  hdr.req = next_req_++;
  MC_RETURN_IF_ERROR(iface_->send(*conn_, hdr, {}));
  waiting_.emplace(hdr.req, std::move(w));
  return Status::InProgress;
}

Status VendorEp::get_bcopy(mc::uct::UnpackCallback unpack, void* arg, size_t length,
                           uint64_t remote_addr, const mc::uct::Rkey& rkey, Completion* comp) {
  if (length > iface_->config().seg_size) return Status::InvalidParam;
  return get(remote_addr, length, rkey, Waiting{unpack, arg, {}, comp});
}

Status VendorEp::get_zcopy(const Iov* iov, size_t iov_count, uint64_t remote_addr,
                           const mc::uct::Rkey& rkey, Completion* comp) {
  size_t length = 0;
  for (size_t i = 0; i < iov_count; ++i) length += iov[i].length;
  return get(remote_addr, length, rkey,
             Waiting{nullptr, nullptr, std::vector<Iov>(iov, iov + iov_count), comp});
}

Status VendorEp::am(uint8_t id, std::span<const Iov> payload) {
  if (id >= mc::uct::kAmIdMax) {
    MC_LOG(error) << "vendor: active message id " << unsigned(id) << " out of range";
    return Status::InvalidParam;
  }
  size_t length = 0;
  for (const Iov& v : payload) length += v.length;
  if (!iface_->has_room(*conn_, sizeof(FrameHeader) + length)) return Status::NoResource;
  FrameHeader hdr{};
  hdr.type = kAm;
  hdr.am_id = id;
  hdr.length = length;
  dirty_ = true;
  return iface_->send(*conn_, hdr, payload);
}

Status VendorEp::am_short(uint8_t id, uint64_t header, const void* payload, size_t length) {
  if (sizeof(header) + length > iface_->config().seg_size) return Status::InvalidParam;
  const Iov v[2] = {{&header, sizeof(header), nullptr},
                    {const_cast<void*>(payload), length, nullptr}};
  return am(id, v);
}

Result<size_t> VendorEp::am_bcopy(uint8_t id, mc::uct::PackCallback pack, void* arg) {
  if (!iface_->has_room(*conn_, sizeof(FrameHeader) + iface_->config().seg_size)) {
    return Status::NoResource;
  }
  std::vector<uint8_t> data(iface_->config().seg_size);
  const size_t length = pack(data.data(), arg);
  if (length > data.size()) return Status::InvalidParam;
  const Iov v{data.data(), length, nullptr};
  MC_RETURN_IF_ERROR(am(id, {&v, 1}));
  return length;
}

Status VendorEp::am_zcopy(uint8_t id, const void* header, size_t header_length, const Iov* iov,
                          size_t iov_count, Completion*) {
  size_t total = header_length;
  for (size_t i = 0; i < iov_count; ++i) total += iov[i].length;
  if (header_length > 128 || total > iface_->config().seg_size) return Status::InvalidParam;
  std::vector<Iov> v{{const_cast<void*>(header), header_length, nullptr}};
  v.insert(v.end(), iov, iov + iov_count);
  return am(id, v);
}

Status VendorEp::flush(Completion* comp) {
  if (conn_->broken) return Status::ConnectionReset;
  if (!dirty()) return Status::Ok;
  if (!iface_->has_room(*conn_, sizeof(FrameHeader))) return Status::NoResource;
  FrameHeader hdr{};
  hdr.type = kFlushReq;
  hdr.req = next_req_++;
  MC_RETURN_IF_ERROR(iface_->send(*conn_, hdr, {}));
  dirty_ = false;
  waiting_.emplace(hdr.req, Waiting{nullptr, nullptr, {}, comp});
  return Status::InProgress;
}

void VendorEp::on_reply(const FrameHeader& hdr, const uint8_t* payload) {
  auto it = waiting_.find(hdr.req);
  if (it == waiting_.end()) {
    MC_LOG(error) << "vendor: reply to unknown request " << hdr.req;
    return;
  }
  Waiting w = std::move(it->second);
  waiting_.erase(it);
  Status s = static_cast<Status>(hdr.status);
  if (hdr.type == kGetRep && s == Status::Ok) {
    if (w.unpack) {
      w.unpack(w.arg, payload, hdr.length);
    } else {
      for (const Iov& v : w.iov) {
        if (v.length) std::memcpy(v.buffer, payload, v.length);
        payload += v.length;
      }
    }
  }
  if (s != Status::Ok) MC_LOG(error) << "vendor: the target refused a request: " << s;
  if (w.comp) mc::uct::completion_update(w.comp, s);
}

void VendorEp::on_broken(Status status) {
  std::map<uint64_t, Waiting> waiting = std::move(waiting_);
  waiting_.clear();
  for (auto& [req, w] : waiting) {
    if (w.comp) mc::uct::completion_update(w.comp, status);
  }
}

Status VendorEp::pending_add(mc::uct::PendingReq* req) {
  if (iface_->has_room(*conn_, sizeof(FrameHeader) + iface_->config().seg_size)) {
    return Status::Busy;
  }
  iface_->pending().push(req);
  return Status::Ok;
}

void VendorEp::pending_purge(const std::function<void(mc::uct::PendingReq*)>& cb) {
  iface_->pending().purge(cb);
}

}  // namespace vendor
