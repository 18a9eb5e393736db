// SPDX-License-Identifier: Apache-2.0
// Rendezvous for large active messages: the request-to-send and
// acknowledgement codecs (wire in proto/am_wire.h), the sender's op that
// waits for the acknowledgement, and a one-message control op.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ucp/api/mem_handle.h"
#include "ucp/api/request.h"
#include "ucp/api/rkey.h"
#include "ucp/proto/lane_runtime.h"
#include "ucp/proto/request_op.h"
#include "ucs/sys/visibility.h"

namespace mc::ucp {

class WorkerImpl;
class EndpointImpl;

/// A request to send, decoded.
struct RndvRts {
  uint16_t am_id = 0;
  uint64_t sender_uuid = 0;
  uint64_t rndv_id = 0;
  uint64_t length = 0;
  uint64_t remote_addr = 0;
  std::vector<uint8_t> address;  ///< the sender's packed worker address
  std::vector<uint8_t> rkey;     ///< the sender's packed rkey of the buffer
};

MC_INTERNAL std::vector<uint8_t> rts_pack(const RndvRts& rts);
/// InvalidParam with `why` for a short, overlong or inconsistent message.
MC_INTERNAL Result<RndvRts> rts_unpack(std::span<const uint8_t> bytes, std::string* why);
MC_INTERNAL std::vector<uint8_t> ats_pack(uint64_t rndv_id, Status status);
/// The rendezvous id and the receiver's status; InvalidParam with `why`.
MC_INTERNAL Result<std::pair<uint64_t, Status>> ats_unpack(std::span<const uint8_t> bytes, std::string* why);

/// One rendezvous being received (the worker's).
struct RndvRecv {
  RndvRts rts;
  EndpointImpl* ep = nullptr;  ///< a reply endpoint of the worker
  std::unique_ptr<Rkey> rkey;
  std::unique_ptr<uint8_t[]> buffer;
  std::shared_ptr<Request> get;
  bool done = false;
};

/// Sends one UCT active message `uct_id` with `bytes` by bcopy on `lane`,
/// retrying while the lane has no resource.
class CtrlSendOp : public proto::RequestOp {
 public:
  CtrlSendOp(const std::vector<proto::LaneRuntime>* lanes, size_t lane, uint8_t uct_id,
             std::vector<uint8_t> bytes)
      : lanes_(lanes), lane_(lane), uct_id_(uct_id), bytes_(std::move(bytes)) {}
  ucs::Status progress() override;
  void abort() override {}
  size_t in_flight() const override { return 0; }
  void orphan() override { lanes_ = nullptr; }

 private:
  const std::vector<proto::LaneRuntime>* lanes_;
  size_t lane_;
  uint8_t uct_id_;
  std::vector<uint8_t> bytes_;
};

/// The sender's side: sends the request to send, then completes with the
/// receiver's acknowledgement. Keeps the buffer registered until then.
class RndvSendOp : public proto::RequestOp {
 public:
  RndvSendOp(WorkerImpl* worker, uint64_t rndv_id, std::unique_ptr<MemHandle> own,
             std::unique_ptr<CtrlSendOp> rts)
      : worker_(worker), rndv_id_(rndv_id), own_(std::move(own)), rts_(std::move(rts)) {}
  ~RndvSendOp() override;
  ucs::Status progress() override;
  void abort() override;
  size_t in_flight() const override { return 0; }
  void orphan() override { rts_->orphan(); }

  /// The receiver's acknowledgement arrived with its status.
  void acked(Status status) { ack_ = status; }
  /// The worker goes first: forget it.
  void detach_worker() { worker_ = nullptr; }

 private:
  void unregister();

  WorkerImpl* worker_;
  uint64_t rndv_id_;
  std::unique_ptr<MemHandle> own_;  ///< null when the user's MemHandle covers the buffer
  std::unique_ptr<CtrlSendOp> rts_;
  bool rts_sent_ = false;
  Status ack_ = Status::InProgress;
};

}  // namespace mc::ucp
