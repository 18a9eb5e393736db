// SPDX-License-Identifier: Apache-2.0
// EndpointImpl: the endpoint behind api/endpoint.h's Endpoint. Its public
// methods are the application's (Endpoint's forward to them; on an
// EndpointImpl they are called directly, without the forwarding call) and
// what the library's own tools and tests look at: the peer's address, the
// lane selection, the protocol tables and the lanes' run-time state. Not
// installed.
#pragma once

#include <cstdint>
#include <memory>
#include <ostream>
#include <span>
#include <string>
#include <vector>

#include "ucp/api/endpoint.h"
#include "ucp/proto/am_op.h"
#include "ucp/proto/ep_protocols.h"
#include "ucp/proto/flush_op.h"
#include "ucp/proto/lane_runtime.h"
#include "ucp/proto/rma_op.h"
#include "ucp/proto/staging_op.h"
#include "ucp/wireup/address.h"
#include "ucp/wireup/lane_select.h"

namespace mc::ucp {

class WorkerImpl;

class MC_INTERNAL EndpointImpl final : public Endpoint {
 public:
  ~EndpointImpl() override;

  // The operations of Endpoint (api/endpoint.h, which says what they do;
  // put_nbx is its own, in line).
  Result<std::shared_ptr<Request>> get_nbx(void* buffer, size_t length, uint64_t remote_addr,
                                           const Rkey& rkey, const RequestParams& params = {});
  Result<std::shared_ptr<Request>> am_send_nbx(uint16_t id, const void* buffer, size_t length,
                                               const RequestParams& params = {});
  Result<std::shared_ptr<Request>> flush(const RequestParams& params = {});
  Result<std::shared_ptr<Request>> close(CloseMode mode, const RequestParams& params = {});
  Result<std::unique_ptr<Rkey>> rkey_unpack(std::span<const uint8_t> packed) const;
  void print(std::ostream& os) const;
  std::vector<LaneRank> rank_lanes(const RailPreference& rails) const;
  std::vector<LaneInfo> lane_info() const;
  void lane_counters(std::vector<LaneCounters>* out) const;

  /// The peer's unpacked address.
  const wireup::WorkerAddress& peer() const { return peer_; }
  /// The lane selection, with every reason.
  const wireup::LaneSelection& lanes() const { return selection_; }
  /// The protocol tables.
  const proto::EpProtocols& protocols() const { return *protocols_; }
  /// The run-time state of every lane (tests, tools).
  const std::vector<proto::LaneRuntime>& lane_runtime() const { return runtime_; }

  // What the worker's rendezvous and remote staging use.
  /// The lane an active message takes now: the AM lane while healthy, else
  /// a healthy AM rail or standby; -1 when the endpoint has none.
  int am_lane() const {
    return selection_.am_lane < 0
               ? -1
               : static_cast<int>(am_lane_now(static_cast<size_t>(selection_.am_lane)));
  }
  /// Sends `bytes` to the peer's worker as control message `uct_id` on
  /// am_lane() (an acknowledgement, an answer); Unsupported when there is
  /// no active-message lane.
  Status send_ctrl(uint8_t uct_id, std::vector<uint8_t> bytes);
  /// The network stage of a StagingOp: each fragment by the registered host
  /// table of `op` between a bounce buffer of `bounce_memh` and `rkey`
  /// (which must outlive the op).
  proto::StagingNetwork staging_network(proto::Op op, const Rkey& rkey,
                                        const MemHandle* bounce_memh,
                                        std::shared_ptr<RailPreference> rails);

  // What the handle calls: Endpoint::put_nbx in line, then one of these.
  /// A host-memory put of 1..first_put_.entry.max bytes without a rail
  /// preference, done in the call by first_put_'s entry: true once done,
  /// counted and its callback run (its request is the worker's completed
  /// one, Endpoint::done_); false when it was not (rma() then takes it, checks and
  /// all).
  bool put_first_now(const void* buffer, size_t length, uint64_t remote_addr, const Rkey& rkey,
                     const RequestParams& params);
  /// Whether `rails` may change which lanes a put or get uses here.
  bool ranks(const RailPreference* rails) const { return rails && !rails->empty() && rails_rank_; }
  /// A put or get: the rkey's range checked, the memory type detected when
  /// asked, then the protocol of the size's range in the table.
  Result<std::shared_ptr<Request>> rma(proto::Op op, void* buffer, size_t length,
                                       uint64_t remote_addr, const Rkey& rkey,
                                       const RequestParams& params);

  // What its worker calls: WorkerImpl::ep_create makes and connects it.
  EndpointImpl(WorkerImpl* worker, wireup::WorkerAddress peer, wireup::LaneSelection selection);
  /// Connects every lane's UCT endpoint and builds the immediate entries.
  Status connect();
  /// A UCT endpoint of lane `lane` reported `status` (its transport failed).
  void on_lane_error(size_t lane, Status status);
  /// Starts, checks and finishes reconnections; the worker calls it from
  /// progress() while this endpoint has failed lanes. Returns events.
  unsigned progress_reconnect(uint64_t now);

 private:
  /// The immediate entry of the first range of the host put tables, when
  /// both (registered buffer or not) agree on it and a put there completes
  /// in the call (short, bcopy); entry.max 0: none. Set by build_entries().
  struct FirstPut {
    proto::ProtoKind kind = proto::ProtoKind::Short;
    proto::RmaEntry entry;
  };
  /// The immediate entry of every range of the put and get tables
  /// (entries_[put 0, get 1][memory type][registered]), and first_put_:
  /// once, when the endpoint connects.
  void build_entries();
  /// Posts [buffer, +length) as the one slice `entry` (of a `kind` range)
  /// moves, with the call proto::slice_call() picks on its lane: Ok when
  /// the transport did it in the call, InProgress when posted on `slot`'s
  /// completion (zero-copy, a bcopy get; never without a slot); anything
  /// else when nothing was done (too long for the entry, the lane down, no
  /// key for it, a buffer the lane would have to register, NoResource).
  Status post_now(proto::Op op, proto::ProtoKind kind, const proto::RmaEntry& entry, void* buffer,
                  size_t length, uint64_t remote_addr, const Rkey& rkey, const MemHandle* memh,
                  proto::PostedSliceOp::Slot* slot);
  /// A put or get that the range's immediate entry moves: the worker's
  /// completed request when done in the call, a request around the posted
  /// operation (proto::PostedSliceOp) when it is in progress, null when
  /// nothing was done (the general path then takes it).
  std::shared_ptr<Request> rma_now(proto::Op op, const proto::ProtoRange& range,
                                   const proto::RmaEntry& entry, void* buffer, size_t length,
                                   uint64_t remote_addr, const Rkey& rkey,
                                   const RequestParams& params);
  /// The general path of rma(): an RmaOp moving [buffer, +length) by
  /// `range`, submitted to the worker. Out of line, so that rma()'s own
  /// frame stays small for the operations done at once.
  Result<std::shared_ptr<Request>> rma_submit(proto::Op op, const proto::ProtoRange& range,
                                              void* buffer, size_t length, uint64_t remote_addr,
                                              const Rkey& rkey, const RequestParams& params);
  /// The parameters of an RmaOp moving [buffer, +length) by `range`.
  proto::RmaParams rma_params(proto::Op op, const proto::ProtoRange& range, void* buffer,
                              size_t length, uint64_t remote_addr, const Rkey& rkey,
                              const MemHandle* memh, const RailPreference* rails) const;
  /// A put or get of `mem` memory through host bounce buffers (staging).
  Result<std::shared_ptr<Request>> rma_staged(proto::Op op, const proto::Staging& staging,
                                              void* buffer, size_t length, uint64_t remote_addr,
                                              const Rkey& rkey, const RequestParams& params);
  /// A put or get of a peer's memory no lane's key reaches (its GPU memory
  /// over tcp or sm): the peer stages it (core/worker_remote_staging.cc);
  /// local GPU memory is staged here first, by `staging` (null: host memory).
  Result<std::shared_ptr<Request>> rma_remote_staged(proto::Op op, const proto::Staging* staging,
                                                     void* buffer, size_t length,
                                                     uint64_t remote_addr,
                                                     const RequestParams& params);
  /// An active message of a short range sent at once by am_short, as the
  /// general path would send it: the worker's completed request; null when
  /// it was not sent (the general path then takes it).
  std::shared_ptr<Request> am_now(uint16_t id, const proto::ProtoRange& range, const void* buffer,
                                  size_t length, const RequestParams& params);
  /// The lanes of an operation: the first `carrying` take its slices, the
  /// others stand by for a slice whose lane fails; `rank` per lane (empty:
  /// all equal).
  struct LanePlan {
    std::vector<size_t> lanes;
    size_t carrying = 0;
    std::vector<unsigned> rank;
  };
  LanePlan lanes_for(proto::Op op, const proto::ProtoRange& range,
                     const RailPreference* rails = nullptr) const;
  unsigned lane_rank(size_t lane, const RailPreference& rails) const;
  /// Logs why no protocol moves `op` for memory `mem`; Unsupported.
  Status no_protocol(proto::Op op, uct::MemType mem) const;
  /// Rendezvous (core/worker_rndv.cc); Unsupported when the request to send
  /// does not fit the lane (the caller sends eagerly instead).
  Result<std::shared_ptr<Request>> rndv_send(uint16_t id, const void* buffer, size_t length,
                                             const RequestParams& params, size_t am_lane);
  void cancel_requests();

  /// A failed lane's way back (core/endpoint_reconnect.cc): a new UCT
  /// endpoint is made for it after a delay and replaces the failed one once
  /// connected; the peer's iface takes it like any new connection.
  struct LaneReconnect {
    std::unique_ptr<uct::Endpoint> attempt;  ///< connecting, not yet used
    uint64_t next_ns = 0;                    ///< when the next attempt starts
    uint64_t delay_ns = 0;                   ///< doubles per failed attempt, up to 8x
    unsigned attempts = 0;                   ///< failed attempts since the lane failed
    std::string why;                         ///< "connect failed: ...", "failed: ..."
  };
  /// A new UCT endpoint for `lane` (logs nothing: the transport did).
  Result<std::unique_ptr<uct::Endpoint>> lane_connect(size_t lane) const;
  /// Marks `lane` failed and, unless MC_LANE_RECONNECT_INTERVAL is off,
  /// schedules its first reconnection.
  void lane_failed(size_t lane, Status status, const std::string& why);
  /// Whether every lane an operation has is down (a new endpoint fails).
  bool missing_lanes(std::string* what) const;
  /// Active-message lanes other than the AM rails (any lane that can carry
  /// active messages): they stand by when the AM lane failed.
  std::vector<size_t> am_standby_lanes() const;
  /// `preferred` when healthy, else the first healthy AM rail or standby.
  size_t am_lane_now(size_t preferred) const;
  /// One line per failed lane: why, and where its reconnection stands.
  void print_lane_state(std::ostream& os) const;

  WorkerImpl* worker_;
  wireup::WorkerAddress peer_;
  wireup::LaneSelection selection_;
  std::shared_ptr<const proto::EpProtocols> protocols_;
  FirstPut first_put_;
  /// Per range of each table (build_entries()).
  std::vector<proto::RmaEntry> entries_[2][proto::kProtoMemTypes][2];
  /// Whether a rail preference can reorder the lanes a put or get may use
  /// (two or more, one on a network device: lane_rank() ranks only those);
  /// when not, a preference leaves the immediate entries as they are.
  /// Set by build_entries().
  bool rails_rank_ = false;
  proto::AmOrder am_order_;  ///< its active messages waiting for room, oldest first
  std::vector<std::unique_ptr<uct::Endpoint>> uct_eps_;  ///< per lane
  std::vector<proto::LaneRuntime> runtime_;              ///< per lane; ops point into it
  bool closed_ = false;
  bool counted_ = false;  ///< its lanes are counted in the worker's ifaces (WorkerIface::lanes)
  std::vector<LaneReconnect> reconnect_;  ///< per lane
  /// Its lanes' losses of locally completed data, for its flushes.
  proto::LossCount losses_;
};

/// The endpoint behind `ep` (every Endpoint is one).
inline EndpointImpl& impl(Endpoint& ep) {
  return static_cast<EndpointImpl&>(ep);
}
inline const EndpointImpl& impl(const Endpoint& ep) {
  return static_cast<const EndpointImpl&>(ep);
}

}  // namespace mc::ucp
