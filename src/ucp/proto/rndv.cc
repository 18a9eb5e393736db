// SPDX-License-Identifier: Apache-2.0
// Rendezvous: codecs, the sender's ops, EndpointImpl::rndv_send and the
// receiver's side in the worker (get into place, deliver, acknowledge).
#include "ucp/proto/rndv.h"

#include <cstring>

#include "ucp/core/endpoint.h"
#include "ucp/core/worker.h"
#include "ucp/proto/am_wire.h"
#include "ucs/datastruct/wire.h"
#include "ucs/log/log.h"

namespace mc::ucp {

std::vector<uint8_t> rts_pack(const RndvRts& rts) {
  std::vector<uint8_t> out;
  ucs::WireWriter w(&out);
  w.u16(rts.am_id);
  w.u16(0);
  w.u32(0);
  w.u64(rts.sender_uuid);
  w.u64(rts.rndv_id);
  w.u64(rts.length);
  w.u64(rts.remote_addr);
  w.u32(static_cast<uint32_t>(rts.address.size()));
  w.u32(static_cast<uint32_t>(rts.rkey.size()));
  w.u32(0);
  w.bytes(rts.address.data(), rts.address.size());
  w.bytes(rts.rkey.data(), rts.rkey.size());
  return out;
}

Result<RndvRts> rts_unpack(std::span<const uint8_t> bytes, std::string* why) {
  ucs::WireReader r(bytes);
  RndvRts rts;
  rts.am_id = r.u16();
  const uint16_t flags = r.u16();
  (void)r.u32();
  rts.sender_uuid = r.u64();
  rts.rndv_id = r.u64();
  rts.length = r.u64();
  rts.remote_addr = r.u64();
  const uint32_t alen = r.u32();
  const uint32_t klen = r.u32();
  (void)r.u32();
  if (!r.ok())
    return *why = "request to send of " + std::to_string(bytes.size()) +
                  " bytes is shorter than its 52-byte header",
           Status::InvalidParam;
  if (flags != 0)
    return *why = "request to send has unknown flags " + std::to_string(flags),
           Status::InvalidParam;
  if (r.remaining() != uint64_t{alen} + klen) {
    return *why = "request to send announces " + std::to_string(alen) + " + " +
                  std::to_string(klen) + " bytes of address and rkey but carries " +
                  std::to_string(r.remaining()),
           Status::InvalidParam;
  }
  if (rts.length == 0 || rts.length > proto::kAmMaxMessage) {
    return *why = "request to send announces " + std::to_string(rts.length) + " bytes (1.." +
                  std::to_string(proto::kAmMaxMessage) + " accepted)",
           Status::InvalidParam;
  }
  std::span<const uint8_t> a = r.bytes(alen);
  std::span<const uint8_t> k = r.bytes(klen);
  rts.address.assign(a.begin(), a.end());
  rts.rkey.assign(k.begin(), k.end());
  return rts;
}

std::vector<uint8_t> ats_pack(uint64_t rndv_id, Status status) {
  std::vector<uint8_t> out;
  ucs::WireWriter w(&out);
  w.u64(rndv_id);
  w.u32(static_cast<uint32_t>(static_cast<int32_t>(status)));
  w.u32(0);
  return out;
}

Result<std::pair<uint64_t, Status>> ats_unpack(std::span<const uint8_t> bytes, std::string* why) {
  if (bytes.size() != proto::kAmAtsLength) {
    return *why = "rendezvous acknowledgement of " + std::to_string(bytes.size()) +
                  " bytes (16 expected)",
           Status::InvalidParam;
  }
  ucs::WireReader r(bytes);
  const uint64_t id = r.u64();
  const auto value = static_cast<int32_t>(r.u32());
  // Ok or an error (negative, int8 on every API); never InProgress.
  if (value > 0 || value < INT8_MIN) {
    return *why = "rendezvous acknowledgement carries status " + std::to_string(value) +
                  ", not a final status",
           Status::InvalidParam;
  }
  return std::make_pair(id, static_cast<Status>(value));
}

namespace {

size_t pack_bytes(void* dest, void* arg) {
  const auto* v = static_cast<const std::vector<uint8_t>*>(arg);
  std::memcpy(dest, v->data(), v->size());
  return v->size();
}

}  // namespace

Status CtrlSendOp::progress() {
  if (!lanes_) return Status::Canceled;
  const proto::LaneRuntime& lr = (*lanes_)[lane_];
  if (is_error(lr.status)) return lr.status;
  Result<size_t> r = lr.ep->am_bcopy(uct_id_, pack_bytes, &bytes_);
  if (r.ok()) return Status::Ok;
  return r.status() == Status::NoResource ? Status::InProgress : r.status();
}

RndvSendOp::~RndvSendOp() {
  unregister();
}

void RndvSendOp::unregister() {
  if (worker_) worker_->forget_rndv_send(rndv_id_);
  worker_ = nullptr;
}

Status RndvSendOp::progress() {
  if (!rts_sent_) {
    const Status s = rts_->progress();
    if (s == Status::InProgress) return s;
    if (is_error(s)) {
      unregister();
      return s;
    }
    rts_sent_ = true;
  }
  if (ack_ != Status::InProgress) unregister();
  return ack_;
}

void RndvSendOp::abort() {
  unregister();
}

}  // namespace mc::ucp
