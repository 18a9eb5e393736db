// SPDX-License-Identifier: Apache-2.0
// Remote staging in the worker. The initiator
// (EndpointImpl::rma_remote_staged, core/endpoint_staging.cc) sends a request naming the target's
// memory and its own host buffer, and completes with the target's answer; local GPU memory is
// staged into the initiator's bounce buffers first, each fragment one remote staged op. The target
// checks the range against its context's remote-accessible registrations, then runs a StagingOp on
// its side: for a put, a network get from the initiator's buffer into bounce buffers and a
// memory-type copy into its memory; for a get, the copy out and a network put into the initiator's
// buffer, flushed; then answers.
#include "ucp/core/endpoint.h"
#include "ucp/core/remote_regions.h"
#include "ucp/core/worker.h"
#include "ucp/proto/am_wire.h"
#include "ucp/proto/remote_staging.h"
#include "ucp/proto/staging_op.h"
#include "ucp/proto/staging_pool.h"
#include "ucs/log/log.h"

namespace mc::ucp {

/// One request a target serves. Members go in reverse: the requests (whose
/// ops use the rkey) before the rkey.
struct RemoteStagingServe {
  RemoteStagingRequest req;
  EndpointImpl* ep = nullptr;  ///< a reply endpoint of the worker
  std::unique_ptr<Rkey> rkey;
  std::shared_ptr<Request> staging;
  std::shared_ptr<Request> flush;
  bool done = false;
};

RemoteStaging::RemoteStaging(WorkerImpl* worker) : worker_(worker) {}

RemoteStaging::~RemoteStaging() {
  close();
}

void RemoteStaging::close() {
  for (auto& [id, op] : ops_) op->detach_worker();
  ops_.clear();
}

Result<std::unique_ptr<proto::RequestOp>> RemoteStaging::make_op(EndpointImpl& ep, proto::Op op,
                                                                 void* buffer, size_t length,
                                                                 uint64_t remote_addr,
                                                                 const MemHandle* memh) {
  if (ep.am_lane() < 0) {
    MC_LOG(error) << "ucp: cannot " << proto::op_name(op) << " a peer's memory no lane reaches on "
                  << ep.peer().hostname << " by remote staging: no active-message lane";
    return Status::Unsupported;
  }
  std::unique_ptr<MemHandle> own;
  if (!memh || !memh->contains(buffer, length)) {
    MC_ASSIGN_OR_RETURN(own, MemHandle::map(worker_->context(), buffer, length, uct::kAccessAll,
                                            uct::MemType::Host));
    memh = own.get();
  }
  MC_ASSIGN_OR_RETURN(std::vector<uint8_t> rkey, memh->rkey_pack());
  RemoteStagingRequest req;
  req.op = op;
  req.sender_uuid = worker_->uuid();
  req.request_id = next_id_++;
  req.remote_addr = remote_addr;
  req.length = length;
  req.host_addr = reinterpret_cast<uintptr_t>(buffer);
  req.address = worker_->address();
  req.rkey = std::move(rkey);
  std::vector<uint8_t> bytes = remote_staging_request_pack(req);
  const size_t lane = static_cast<size_t>(ep.am_lane());
  const uct::IfaceAttr& a = ep.lane_runtime()[lane].attr;
  if (!(a.cap & uct::kCapAmBcopy) || bytes.size() > a.am.max_bcopy) {
    MC_LOG(error) << "ucp: a remote staging request of " << bytes.size()
                  << " bytes does not fit active-message lane " << lane << " to "
                  << ep.peer().hostname;
    return Status::Unsupported;
  }
  auto rop = std::make_unique<RemoteStagingOp>(worker_, req.request_id, std::move(own),
                                               &ep.lane_runtime(), lane, std::move(bytes));
  ops_[req.request_id] = rop.get();
  return std::unique_ptr<proto::RequestOp>(std::move(rop));
}

void RemoteStaging::on_request(const void* data, size_t length) {
  const auto* p = static_cast<const uint8_t*>(data);
  pending_.emplace_back(p, p + length);
}

void RemoteStaging::on_done(const void* data, size_t length) {
  std::string why;
  Result<std::pair<uint64_t, Status>> d =
      remote_staging_done_unpack({static_cast<const uint8_t*>(data), length}, &why);
  if (!d.ok()) {
    MC_LOG(error) << "ucp: dropped a remote staging completion: " << why;
    return;
  }
  auto it = ops_.find(d->first);
  if (it == ops_.end()) {
    MC_LOG(debug) << "ucp: remote staging request " << d->first << " answered after it ended";
    return;
  }
  it->second->done(d->second);
}

unsigned RemoteStaging::progress() {
  unsigned events = 0;
  if (!pending_.empty()) {
    std::vector<std::vector<uint8_t>> pending;
    pending.swap(pending_);
    for (const std::vector<uint8_t>& bytes : pending) serve(bytes);
    events += static_cast<unsigned>(pending.size());
  }
  std::erase_if(serves_, [](const std::unique_ptr<RemoteStagingServe>& s) {
    return s->done && (!s->staging || s->staging->settled()) && (!s->flush || s->flush->settled());
  });
  return events;
}

void RemoteStaging::serve(std::span<const uint8_t> bytes) {
  std::string why;
  Result<RemoteStagingRequest> req = remote_staging_request_unpack(bytes, &why);
  if (!req.ok()) {
    // Nobody to answer: the initiator's deadline ends its request.
    MC_LOG(error) << "ucp: dropped a remote staging request: " << why;
    return;
  }
  Result<EndpointImpl*> ep = worker_->reply_ep(req->sender_uuid, req->address);
  if (!ep.ok()) {
    MC_LOG(error) << "ucp: dropped remote staging request " << req->request_id
                  << ": no endpoint back to its initiator: " << ucs::status_string(ep.status());
    return;
  }
  auto owned = std::make_unique<RemoteStagingServe>();
  RemoteStagingServe* s = owned.get();
  s->req = std::move(*req);
  s->ep = *ep;
  serves_.push_back(std::move(owned));
  const char* name = proto::op_name(s->req.op);
  // A peer touches only memory registered here as remote-accessible, and
  // only inside one such registration.
  const std::optional<uct::MemType> mem =
      worker_->context().remote_regions().find(s->req.remote_addr, s->req.length);
  if (!mem) {
    MC_LOG(error) << "ucp: refused remote staging " << name << " " << s->req.request_id << " from "
                  << s->ep->peer().hostname << ": [0x" << std::hex << s->req.remote_addr << ", +"
                  << std::dec << s->req.length
                  << ") lies in no remote-accessible registration of GPU memory here";
    return reply(s, Status::InvalidParam);
  }
  Result<std::unique_ptr<Rkey>> rkey = s->ep->rkey_unpack(s->req.rkey);
  if (!rkey.ok()) return reply(s, rkey.status());
  if (!(*rkey)->contains(s->req.host_addr, s->req.length)) {
    MC_LOG(error) << "ucp: refused remote staging " << name << " " << s->req.request_id
                  << ": the initiator's buffer [0x" << std::hex << s->req.host_addr << ", +"
                  << std::dec << s->req.length << ") is outside its rkey's range";
    return reply(s, Status::InvalidParam);
  }
  s->rkey = std::move(*rkey);
  Result<StagingPath> path = worker_->staging_path(*mem);
  if (!path.ok()) {
    MC_LOG(error) << "ucp: cannot serve remote staging " << name << " " << s->req.request_id
                  << ": no memory-type transport here copies " << uct::mem_type_name(*mem)
                  << " memory (cuda_copy: see MC_TLS)";
    return reply(s, path.status() == Status::Unsupported ? Status::Unsupported : path.status());
  }
  // Bounce buffers of the target's own: an initiator's staged ops hold the
  // worker's pool while they wait for their peer, which may be waiting for
  // this one's service (both sides staging to each other).
  auto pool = pools_.find(path->frag_size);
  if (pool == pools_.end()) {
    Result<std::shared_ptr<proto::StagingPool>> made =
        proto::StagingPool::create(worker_->context(), path->frag_size, path->depth);
    if (!made.ok()) return reply(s, made.status());
    pool = pools_.emplace(path->frag_size, std::move(*made)).first;
  }
  path->pool = pool->second;
  // The target's side of the initiator's put is a staged get (from the
  // initiator's buffer, then into its memory), and the other way round.
  const proto::Op local_op = s->req.op == proto::Op::Put ? proto::Op::Get : proto::Op::Put;
  proto::StagingParams p = path->params(local_op, reinterpret_cast<void*>(s->req.remote_addr),
                                        s->req.length, s->req.host_addr, nullptr);
  p.network = s->ep->staging_network(local_op, *s->rkey, &path->pool->memh(), nullptr);
  RequestParams params;
  params.callback = [this, s](Status st) { finish(s, st); };
  s->staging = worker_->submit(std::make_unique<proto::StagingOp>(std::move(p)), params, s->ep);
}

void RemoteStaging::finish(RemoteStagingServe* s, Status status) {
  if (status != Status::Ok) {
    MC_LOG(error) << "ucp: remote staging " << proto::op_name(s->req.op) << " " << s->req.request_id
                  << " of " << s->req.length
                  << " bytes failed here: " << ucs::status_string(status);
    return reply(s, status);
  }
  if (s->req.op == proto::Op::Put) return reply(s, Status::Ok);
  // A get: the data is in the initiator's buffer once flushed.
  RequestParams params;
  params.callback = [this, s](Status st) { reply(s, st); };
  Result<std::shared_ptr<Request>> f = s->ep->flush(params);
  if (!f.ok()) return reply(s, f.status());
  s->flush = std::move(*f);
}

void RemoteStaging::reply(RemoteStagingServe* s, Status status) {
  s->done = true;
  if (s->ep->send_ctrl(proto::kAmIdStagingDone,
                       remote_staging_done_pack(s->req.request_id, status)) != Status::Ok) {
    MC_LOG(error) << "ucp: cannot answer remote staging request " << s->req.request_id
                  << ": no active-message lane";
  }
}

}  // namespace mc::ucp
