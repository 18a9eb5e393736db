// SPDX-License-Identifier: Apache-2.0
// WorkerImpl: the worker behind api/worker.h's Worker (whose methods
// forward to it), with what the library's endpoints, protocols, tools and
// tests use besides: the ifaces, the resources as lane selection sees them,
// request submission, staging paths, the file transport. Not installed.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "ucp/api/worker.h"
#include "ucp/proto/ep_protocols.h"
#include "ucp/proto/flush_op.h"
#include "ucp/proto/rma_op.h"
#include "ucp/proto/staging_op.h"
#include "ucp/wireup/address.h"
#include "ucp/wireup/lane_select.h"
#include "ucs/async/event_loop.h"
#include "uct/api/ep.h"
#include "uct/api/iface.h"
#include "ucs/sys/visibility.h"

namespace mc::ucp {

namespace proto {
class StagingPool;
struct Staging;
}  // namespace proto
class EndpointImpl;
class AmReassembly;
class RndvSendOp;
struct RndvRecv;
class RemoteStaging;
class RemoteStagingOp;
class FileService;

/// An iface the worker opened.
struct WorkerIface {
  size_t resource = 0;  ///< into Context::resources()
  std::unique_ptr<uct::Iface> iface;
  uct::IfaceAttr attr;
  /// progress() calls since this iface last had events (capped): an iface
  /// no endpoint has a lane on, quiet for long, is progressed on every 128th
  /// call only.
  uint32_t quiet_calls = 0;
  uint32_t lanes = 0;  ///< lanes of this worker's endpoints on this iface
};

/// What copies between registered host bounce buffers and memory of one type
/// (GPU memory) take in a worker: the staging protocol's memory-type
/// transport and bounce pool (WorkerImpl::staging_path()).
struct StagingPath {
  size_t resource = 0;                   ///< the memory-type transport, into Context::resources()
  std::string name;                      ///< "cuda_copy/cuda0"
  uct::Endpoint* copy_ep = nullptr;      ///< its endpoint to itself, owned by the worker
  uct::MemoryDomain* copy_md = nullptr;  ///< its memory domain
  size_t copy_md_index = 0;              ///< into Context::mds()
  /// Bytes of one fragment: MC_RNDV_FRAG_SIZE's entry for the type, at most
  /// the transport's largest zero-copy put and get.
  size_t frag_size = 0;
  size_t depth = 1;  ///< MC_STAGING_DEPTH: fragments of one operation in flight
  /// The worker's bounce buffers of frag_size bytes (shared with its staged
  /// requests; registered with every md that registers host memory).
  std::shared_ptr<proto::StagingPool> pool;

  /// A StagingOp's parameters for `length` bytes between `buffer` and
  /// `remote_addr` through this path; `user`: the caller's registration of
  /// `buffer`, if any. The caller adds the network stage.
  proto::StagingParams params(proto::Op op, void* buffer, size_t length, uint64_t remote_addr,
                              const MemHandle* user) const;
};

class MC_INTERNAL WorkerImpl final : public Worker {
 public:
  ~WorkerImpl() override;

  /// As Worker::create(), the worker itself.
  static Result<std::unique_ptr<WorkerImpl>> create(Context& context, const WorkerParams& params);

  // Worker's methods.
  Context& context() const { return *context_; }
  uint64_t uuid() const { return uuid_; }
  std::vector<uint8_t> address() const;  // wireup/address.h
  unsigned progress();
  int numa_node() const { return numa_node_; }
  ThreadMode thread_mode() const { return multi_ ? ThreadMode::Multi : ThreadMode::Single; }
  int event_fd() const { return epfd_; }
  Status arm();
  bool event_driven() const { return !polled_.load(std::memory_order_relaxed); }
  Status wait(ucs::config::Duration timeout = ucs::config::Duration::max());
  void signal();
  void woken();
  std::unique_lock<std::recursive_mutex> lock() const {
    return multi_ ? std::unique_lock<std::recursive_mutex>(mutex_)
                  : std::unique_lock<std::recursive_mutex>();
  }
  void set_am_handler(uint16_t id, AmCallback callback);
  /// As Worker::ep_create(), the endpoint itself.
  Result<std::unique_ptr<EndpointImpl>> ep_create(std::span<const uint8_t> address);
  Result<std::shared_ptr<Request>> flush(const RequestParams& params = {});
  uct::MemType detect_mem_type(const void* buffer, size_t length) const;
  std::vector<size_t> iface_resources() const;
  // Files (core/worker_files.cc).
  Result<std::unique_ptr<File>> file_open(const std::string& path, bool writable);
  Result<FileRoute> file_route(uct::MemType mem);
  Result<std::shared_ptr<Request>> file_io(const FileIo& io, const RequestParams& params);

  /// The ifaces, in resource order.
  const std::vector<WorkerIface>& ifaces() const { return ifaces_; }
  /// Every resource of the context as lane selection sees it: the enabled
  /// ones that opened, and the others disabled with their reason.
  const std::vector<wireup::LocalResource>& local_resources() const { return local_; }
  /// Index into ifaces() of resource `resource`, or -1.
  int iface_of(size_t resource) const;
  /// Lane selection's limits for an endpoint to `peer`: the rail knobs, the
  /// worker's NUMA node, MC_LOOPBACK_RAILS when `peer` shares this network
  /// namespace.
  wireup::LaneSelectParams lane_params(const wireup::WorkerAddress& peer) const;
  /// Starts a request around `op` (protocol implementations and tests):
  /// progresses it once at once, then from progress(). `ep` is the endpoint
  /// it belongs to (flush ordering, close), or null.
  std::shared_ptr<Request> submit(std::unique_ptr<proto::RequestOp> op, const RequestParams& params,
                                  EndpointImpl* ep = nullptr);
  /// Whether every request of `ep` (every request when null) started
  /// before `seq` has completed.
  bool completed_before(const EndpointImpl* ep, uint64_t seq) const;
  /// The memory-type transport and bounce pool that stage memory of type
  /// `mem` through host memory, for the protocols that move the bounce
  /// buffers themselves (file_io's staged protocol) with proto::StagingOp.
  /// The endpoint and the pool are made on first use and live as long as
  /// the worker. Unsupported (not logged: a query) when no enabled transport
  /// copies between host memory and `mem`; the errors of making the
  /// endpoint or the pool (logged).
  Result<StagingPath> staging_path(uct::MemType mem);

  // What its endpoints and protocols ask of the worker: they reach nothing
  // of it but these and the methods above.
  /// The request of an operation that completed in the call that started
  /// it (the single-slice fast path): runs its callback with Ok, then
  /// returns done_, which no one owns but the worker (no allocation, no
  /// shared count).
  std::shared_ptr<Request> completed_request(const RequestParams& params) {
    // Nothing of the operation is left to progress, flush or cancel, so one
    // completed request serves them all; it never joins active_. An empty
    // owner (the aliasing constructor): copies and destruction of the
    // handle touch no shared count, and done_ lives as long as the worker,
    // which the caller's use of a request may not outlive anyway.
    if (params.callback) params.callback(Status::Ok);
    return std::shared_ptr<Request>(std::shared_ptr<Request>(), done_.get());
  }
  /// The worker's completed request itself (what completed_request() hands out).
  Request* done_request() const { return done_.get(); }
  /// The protocol tables of lane selection `sel`, built once per lane configuration.
  std::shared_ptr<const proto::EpProtocols> protocols_for(const wireup::LaneSelection& sel);
  /// The iface of local resource `resource`, which a lane uses (so it opened).
  WorkerIface& lane_iface(size_t resource) {
    return ifaces_[static_cast<size_t>(iface_of(resource))];
  }
  /// UCT endpoint `uct_ep` is lane `lane` of `ep`: its errors reach ep.
  void map_uct_ep(const uct::Endpoint* uct_ep, EndpointImpl* ep, size_t lane) {
    uct_eps_[uct_ep] = {ep, lane};
  }
  void unmap_uct_ep(const uct::Endpoint* uct_ep) { uct_eps_.erase(uct_ep); }
  /// `ep` has failed lanes to connect again: progress() calls its
  /// progress_reconnect() until unwatch_reconnect().
  void watch_reconnect(EndpointImpl* ep);
  void unwatch_reconnect(EndpointImpl* ep) { std::erase(reconnecting_, ep); }
  /// Cancels every request of `ep` in progress.
  void cancel_requests(const EndpointImpl* ep);
  /// Forgets `ep`, which is being destroyed with its UCT endpoints: its
  /// requests are orphaned (nothing they had in flight will complete).
  void detach(EndpointImpl* ep);
  /// The completions that puts and gets posted by a range's immediate entry
  /// hand their transport (EndpointImpl::rma_now).
  proto::PostedSliceOp::SlotCache& slots() { return slots_; }
  /// The sequence number the next submitted request gets (flush ordering).
  uint64_t next_seq() const { return next_seq_; }
  /// A new id for a fragmented active message.
  uint64_t new_message_id() { return next_message_id_++; }
  /// A new rendezvous id, and the sender's op awaiting its acknowledgement.
  uint64_t new_rndv_id() { return next_rndv_id_++; }
  void add_rndv_send(uint64_t id, RndvSendOp* op) { rndv_sends_[id] = op; }
  void forget_rndv_send(uint64_t id) { rndv_sends_.erase(id); }
  /// Remote staging, both sides.
  RemoteStaging& remote_staging() { return *remote_staging_; }
  /// The endpoint back to the worker `uuid` whose address is `address`
  /// (rendezvous and remote staging answers), made on first use.
  Result<EndpointImpl*> reply_ep(uint64_t uuid, std::span<const uint8_t> address);
  /// The path of a staging plan (EpProtocols' or plan_staging()'s): its
  /// endpoint and pool made on first use.
  Result<StagingPath> staging_path(const proto::Staging& st);
  /// A lane of an endpoint failed holding data that had completed locally
  /// (EndpointImpl::lane_failed): the next worker flush fails with `status`.
  void note_loss(Status status) { losses_.note(status); }

 private:
  explicit WorkerImpl(Context* context);
  Status open_ifaces();
  Status init_wait();  // core/worker_wait.cc
  void set_uct_am_handlers(uct::Iface& iface);
  void on_am_single(const void* data, size_t length);
  void on_am_frag(const void* data, size_t length);
  void deliver(uint16_t id, const void* data, size_t length);
  void on_uct_error(uct::Endpoint* ep, Status status);
  /// The endpoint of the memory-type transport on resource `resource` to
  /// itself (staging copies), made on first use.
  Result<uct::Endpoint*> memtype_ep(size_t resource);
  /// The bounce buffers of staged requests of `frag_size` bytes, `count` of
  /// them, allocated and registered on first use (worker_staging.cc).
  Result<std::shared_ptr<proto::StagingPool>> staging_pool(size_t frag_size, size_t count);
  // Rendezvous (core/worker_rndv.cc).
  void on_am_rts(const void* data, size_t length);
  void on_am_ats(const void* data, size_t length);
  void send_ats(EndpointImpl* ep, uint64_t rndv_id, Status status);
  void start_rndv_recvs();
  void start_rndv_recv(std::span<const uint8_t> bytes);
  void finish_rndv_recv(RndvRecv* r, Status status);
  void reap_rndv_recvs();
  void close_rndv();
  /// Opens the file transport (files_) unless it is open (worker_files.cc).
  Status open_files();

  Context* context_;
  uint64_t uuid_;
  std::unique_ptr<ucs::EventLoop> async_;  ///< declared first: destroyed last
  std::vector<WorkerIface> ifaces_;
  std::vector<wireup::LocalResource> local_;
  std::unordered_map<uint16_t, AmCallback> am_handlers_;
  std::unique_ptr<AmReassembly> reassembly_;
  std::vector<std::shared_ptr<Request>> active_;
  /// Completed with Ok and immutable: every operation that completes in the
  /// call that started it returns this one (completed_request()).
  std::unique_ptr<Request> done_;
  proto::PostedSliceOp::SlotCache slots_;  ///< see slots()
  std::vector<EndpointImpl*> eps_;
  std::vector<EndpointImpl*> reconnecting_;  ///< endpoints with a failed lane to connect again
  std::map<const uct::Endpoint*, std::pair<EndpointImpl*, size_t>> uct_eps_;      ///< -> (ep, lane)
  std::map<std::string, std::shared_ptr<const proto::EpProtocols>> proto_cache_;  ///< by lanes
  // Staging: memory-type endpoints by resource (destroyed before ifaces_),
  // bounce-buffer pools by fragment size (shared with the ops using them).
  std::map<size_t, std::unique_ptr<uct::Endpoint>> memtype_eps_;
  std::map<size_t, std::shared_ptr<proto::StagingPool>> staging_pools_;
  uint64_t progress_calls_ = 0;
  uint64_t next_sweep_ns_ = 0;  ///< progress() sweeps quiet ifaces from then on
  uint64_t next_seq_ = 1;
  /// Losses of locally completed data on any endpoint (note_loss), for
  /// the worker's flushes.
  proto::LossCount losses_;
  uint64_t next_message_id_ = 1;
  // Rendezvous: the sender's ops awaiting an acknowledgement, by id; the
  // receiver's requests to send not yet started, receptions, and endpoints
  // back to the senders (by worker uuid).
  std::map<uint64_t, RndvSendOp*> rndv_sends_;
  uint64_t next_rndv_id_ = 1;
  std::vector<std::vector<uint8_t>> pending_rts_;
  std::vector<std::unique_ptr<RndvRecv>> rndv_recvs_;
  std::map<uint64_t, std::unique_ptr<EndpointImpl>> reply_eps_;
  bool closing_ = false;
  /// Remote staging, both sides (core/worker_remote_staging.cc); destroyed
  /// before the reply endpoints its served requests use.
  std::unique_ptr<RemoteStaging> remote_staging_;
  /// The file transport, opened by the first file_open or file_route;
  /// drained before the requests are cancelled, closed after them.
  std::unique_ptr<FileService> files_;
  Status files_failed_ = Status::Ok;  ///< why the file transport did not open
  // Threads and blocking progress.
  mutable std::recursive_mutex mutex_;  ///< multi mode: taken by every public method
  bool multi_ = false;
  int numa_node_ = -1;
  int epfd_ = -1;                ///< event_fd()
  int wakefd_ = -1;              ///< eventfd of signal(), in epfd_
  std::vector<size_t> armable_;  ///< ifaces_ indices with an event fd
  /// Some iface has no event fd, or its arm() failed. Only ever set, in
  /// init_wait() and arm(); read without the lock (event_driven(), wait()).
  std::atomic<bool> polled_{false};
};

/// The worker behind `w` (every Worker is one).
inline WorkerImpl& impl(Worker& w) {
  return static_cast<WorkerImpl&>(w);
}
inline const WorkerImpl& impl(const Worker& w) {
  return static_cast<const WorkerImpl&>(w);
}

}  // namespace mc::ucp
