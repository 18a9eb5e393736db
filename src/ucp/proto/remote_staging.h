// SPDX-License-Identifier: Apache-2.0
// Remote staging: a put or get of a peer's memory that no lane reaches (its
// GPU memory over tcp or sm), staged by the peer: the request and
// completion codecs, the initiator's op, and the worker's state for both
// sides (core/worker_remote_staging.cc).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ucp/api/mem_handle.h"
#include "ucp/api/request.h"
#include "ucp/api/rkey.h"
#include "ucp/proto/lane_runtime.h"
#include "ucp/proto/proto_select.h"
#include "ucp/proto/request_op.h"
#include "ucp/proto/rndv.h"
#include "ucs/sys/visibility.h"

namespace mc::ucp {

namespace proto {
class StagingPool;
}
class WorkerImpl;
class EndpointImpl;

/// Version of the request (its first byte); a decoder refuses any other.
inline constexpr uint8_t kRemoteStagingVersion = 1;

/// A remote staging request, decoded: the initiator asks the target to move
/// `length` bytes between the target's `remote_addr` and the initiator's
/// host buffer at `host_addr` (its packed rkey `rkey`).
struct RemoteStagingRequest {
  proto::Op op = proto::Op::Put;  ///< the initiator's: Put writes the target's memory
  uint64_t sender_uuid = 0;
  uint64_t request_id = 0;
  uint64_t remote_addr = 0;
  uint64_t length = 0;
  uint64_t host_addr = 0;
  std::vector<uint8_t> address;  ///< the initiator's packed worker address
  std::vector<uint8_t> rkey;     ///< the initiator's packed rkey of the host buffer
};

MC_INTERNAL std::vector<uint8_t> remote_staging_request_pack(const RemoteStagingRequest& r);
/// InvalidParam with `why` for a short, overlong or inconsistent message,
/// another version, an unknown op, an empty or wrapping range.
MC_INTERNAL Result<RemoteStagingRequest> remote_staging_request_unpack(std::span<const uint8_t> bytes,
                                                           std::string* why);
MC_INTERNAL std::vector<uint8_t> remote_staging_done_pack(uint64_t request_id, Status status);
/// The request id and the target's final status; InvalidParam with `why`.
MC_INTERNAL Result<std::pair<uint64_t, Status>> remote_staging_done_unpack(std::span<const uint8_t> bytes,
                                                               std::string* why);

/// The initiator's op of one remote staged put or get: sends the request,
/// then completes with the target's status. Keeps the host buffer's own
/// registration (if it made one) until then. Fails when its lane fails
/// after the request went (the target cannot answer on it). Canceled, it
/// counts as in flight until the target answers (or the lane fails): the
/// target may still read or write the buffer.
class RemoteStagingOp : public proto::RequestOp {
 public:
  RemoteStagingOp(WorkerImpl* worker, uint64_t id, std::unique_ptr<MemHandle> own,
                  const std::vector<proto::LaneRuntime>* lanes, size_t lane,
                  std::vector<uint8_t> request);
  ~RemoteStagingOp() override;
  ucs::Status progress() override;
  void abort() override { aborted_ = true; }
  size_t in_flight() const override;
  void orphan() override;

  /// The target's completion arrived with its status.
  void done(Status status) { done_ = status; }
  /// The worker goes first: forget it.
  void detach_worker() { worker_ = nullptr; }

 private:
  void unregister();

  WorkerImpl* worker_;
  uint64_t id_;
  std::unique_ptr<MemHandle> own_;  ///< null when the caller's MemHandle covers the buffer
  const std::vector<proto::LaneRuntime>* lanes_;
  size_t lane_;
  CtrlSendOp send_;
  bool sent_ = false;
  bool aborted_ = false;
  Status done_ = Status::InProgress;
};

/// One request a target serves (worker_remote_staging.cc).
struct RemoteStagingServe;

/// A worker's remote staging: its initiated ops by id, and the requests it
/// serves. Under the worker's thread rules.
class RemoteStaging {
 public:
  explicit RemoteStaging(WorkerImpl* worker);
  ~RemoteStaging();

  /// Initiator: the op of one put or get of [buffer, +length) (host memory,
  /// registered on the fly unless `memh` covers it) to the peer's
  /// `remote_addr`. Unsupported (logged) when the request does not fit the
  /// active-message lane or there is none.
  Result<std::unique_ptr<proto::RequestOp>> make_op(EndpointImpl& ep, proto::Op op, void* buffer,
                                                    size_t length, uint64_t remote_addr,
                                                    const MemHandle* memh);
  void forget(uint64_t id) { ops_.erase(id); }
  /// UCT handlers: a request (queued: serving it may make an endpoint), a
  /// completion.
  void on_request(const void* data, size_t length);
  void on_done(const void* data, size_t length);
  /// Starts the queued requests and drops the served ones; events.
  unsigned progress();
  bool idle() const { return pending_.empty() && serves_.empty(); }
  /// The worker is closing: initiated ops forget it.
  void close();

 private:
  void serve(std::span<const uint8_t> bytes);
  void finish(RemoteStagingServe* s, Status status);
  void reply(RemoteStagingServe* s, Status status);

  WorkerImpl* worker_;
  std::map<uint64_t, RemoteStagingOp*> ops_;
  uint64_t next_id_ = 1;
  std::vector<std::vector<uint8_t>> pending_;
  std::vector<std::unique_ptr<RemoteStagingServe>> serves_;
  /// The served requests' bounce buffers by fragment size, apart from the
  /// worker's (which its own staged requests hold).
  std::map<size_t, std::shared_ptr<proto::StagingPool>> pools_;
};

}  // namespace mc::ucp
