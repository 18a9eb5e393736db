// SPDX-License-Identifier: Apache-2.0
// Remote staging: the request and completion codecs (wire in
// proto/am_wire.h) and the initiator's op.
#include "ucp/proto/remote_staging.h"

#include "ucp/core/worker.h"
#include "ucp/proto/am_wire.h"
#include "ucs/datastruct/wire.h"

namespace mc::ucp {

std::vector<uint8_t> remote_staging_request_pack(const RemoteStagingRequest& r) {
  std::vector<uint8_t> out;
  ucs::WireWriter w(&out);
  w.u8(kRemoteStagingVersion);
  w.u8(r.op == proto::Op::Put ? 0 : 1);
  w.u16(0);
  w.u32(0);
  w.u64(r.sender_uuid);
  w.u64(r.request_id);
  w.u64(r.remote_addr);
  w.u64(r.length);
  w.u64(r.host_addr);
  w.u32(static_cast<uint32_t>(r.address.size()));
  w.u32(static_cast<uint32_t>(r.rkey.size()));
  w.bytes(r.address.data(), r.address.size());
  w.bytes(r.rkey.data(), r.rkey.size());
  return out;
}

Result<RemoteStagingRequest> remote_staging_request_unpack(std::span<const uint8_t> bytes,
                                                           std::string* why) {
  auto fail = [why](std::string text) {
    *why = std::move(text);
    return Status::InvalidParam;
  };
  ucs::WireReader r(bytes);
  const uint8_t version = r.u8();
  const uint8_t op = r.u8();
  const uint16_t reserved16 = r.u16();
  const uint32_t reserved32 = r.u32();
  RemoteStagingRequest q;
  q.sender_uuid = r.u64();
  q.request_id = r.u64();
  q.remote_addr = r.u64();
  q.length = r.u64();
  q.host_addr = r.u64();
  const uint32_t alen = r.u32();
  const uint32_t klen = r.u32();
  if (!r.ok()) {
    return fail("remote staging request of " + std::to_string(bytes.size()) +
                " bytes is shorter than its " + std::to_string(proto::kAmRemoteStagingHeader) +
                "-byte header");
  }
  if (version != kRemoteStagingVersion) {
    return fail("remote staging request version " + std::to_string(version) + " (" +
                std::to_string(kRemoteStagingVersion) + " expected)");
  }
  if (op > 1) return fail("remote staging request has unknown op " + std::to_string(op));
  if (reserved16 != 0 || reserved32 != 0) {
    return fail("remote staging request has reserved bits set");
  }
  if (r.remaining() != uint64_t{alen} + klen) {
    return fail("remote staging request announces " + std::to_string(alen) + " + " +
                std::to_string(klen) + " bytes of address and rkey but carries " +
                std::to_string(r.remaining()));
  }
  if (q.length == 0 || q.remote_addr + q.length < q.remote_addr ||
      q.host_addr + q.length < q.host_addr) {
    return fail("remote staging request has an empty or wrapping range of " +
                std::to_string(q.length) + " bytes");
  }
  q.op = op == 0 ? proto::Op::Put : proto::Op::Get;
  std::span<const uint8_t> a = r.bytes(alen);
  std::span<const uint8_t> k = r.bytes(klen);
  q.address.assign(a.begin(), a.end());
  q.rkey.assign(k.begin(), k.end());
  return q;
}

std::vector<uint8_t> remote_staging_done_pack(uint64_t request_id, Status status) {
  std::vector<uint8_t> out;
  ucs::WireWriter w(&out);
  w.u8(kRemoteStagingVersion);
  w.u8(0);
  w.u16(0);
  w.u32(static_cast<uint32_t>(static_cast<int32_t>(status)));
  w.u64(request_id);
  return out;
}

Result<std::pair<uint64_t, Status>> remote_staging_done_unpack(std::span<const uint8_t> bytes,
                                                               std::string* why) {
  if (bytes.size() != proto::kAmRemoteStagingDoneLength) {
    *why = "remote staging completion of " + std::to_string(bytes.size()) + " bytes (" +
           std::to_string(proto::kAmRemoteStagingDoneLength) + " expected)";
    return Status::InvalidParam;
  }
  ucs::WireReader r(bytes);
  const uint8_t version = r.u8();
  const uint8_t reserved8 = r.u8();
  const uint16_t reserved16 = r.u16();
  const auto value = static_cast<int32_t>(r.u32());
  const uint64_t id = r.u64();
  if (version != kRemoteStagingVersion) {
    *why = "remote staging completion version " + std::to_string(version) + " (" +
           std::to_string(kRemoteStagingVersion) + " expected)";
    return Status::InvalidParam;
  }
  if (reserved8 != 0 || reserved16 != 0) {
    *why = "remote staging completion has reserved bits set";
    return Status::InvalidParam;
  }
  // Ok or an error (negative, int8 on every API); never InProgress.
  if (value > 0 || value < INT8_MIN) {
    *why = "remote staging completion carries status " + std::to_string(value) +
           ", not a final status";
    return Status::InvalidParam;
  }
  return std::make_pair(id, static_cast<Status>(value));
}

RemoteStagingOp::RemoteStagingOp(WorkerImpl* worker, uint64_t id, std::unique_ptr<MemHandle> own,
                                 const std::vector<proto::LaneRuntime>* lanes, size_t lane,
                                 std::vector<uint8_t> request)
    : worker_(worker),
      id_(id),
      own_(std::move(own)),
      lanes_(lanes),
      lane_(lane),
      send_(lanes, lane, proto::kAmIdStagingRequest, std::move(request)) {}

RemoteStagingOp::~RemoteStagingOp() {
  unregister();
}

void RemoteStagingOp::unregister() {
  if (worker_) worker_->remote_staging().forget(id_);
  worker_ = nullptr;
}

Status RemoteStagingOp::progress() {
  if (!lanes_) return Status::Canceled;
  if (aborted_) return Status::Canceled;
  if (!sent_) {
    const Status s = send_.progress();
    if (s == Status::InProgress) return s;
    if (is_error(s)) {
      unregister();
      return s;
    }
    sent_ = true;
  }
  if (done_ != Status::InProgress) {
    unregister();
    return done_;
  }
  // The target answers on the lane the request went (its reply endpoint's
  // am lane reaches this worker); once it failed, no answer comes.
  const Status lane = (*lanes_)[lane_].status;
  if (is_error(lane)) {
    unregister();
    return lane;
  }
  return Status::InProgress;
}

size_t RemoteStagingOp::in_flight() const {
  // Sent and not answered: the target may still touch the buffer.
  if (!sent_ || !lanes_ || !worker_ || done_ != Status::InProgress) return 0;
  return is_error((*lanes_)[lane_].status) ? 0 : 1;
}

void RemoteStagingOp::orphan() {
  lanes_ = nullptr;
  send_.orphan();
}

}  // namespace mc::ucp
