// SPDX-License-Identifier: Apache-2.0
// Rendezvous in the worker, the receiver's side (the sender's is
// EndpointImpl::rndv_send, core/endpoint_rndv.cc): a request to send is queued by the UCT handler
// and started from progress() (it may create a reply endpoint, which a UCT handler must not do),
// its payload is got into a buffer of its own, delivered to the user's handler, and acknowledged to
// the sender.
#include <new>

#include "ucp/core/endpoint.h"
#include "ucp/core/worker.h"
#include "ucp/proto/am_wire.h"
#include "ucp/proto/rndv.h"
#include "ucs/log/log.h"

namespace mc::ucp {

void WorkerImpl::on_am_rts(const void* data, size_t length) {
  const auto* p = static_cast<const uint8_t*>(data);
  pending_rts_.emplace_back(p, p + length);
}

void WorkerImpl::on_am_ats(const void* data, size_t length) {
  std::string why;
  Result<std::pair<uint64_t, Status>> ats =
      ats_unpack({static_cast<const uint8_t*>(data), length}, &why);
  if (!ats.ok()) {
    MC_LOG(error) << "ucp: dropped a rendezvous acknowledgement: " << why;
    return;
  }
  auto it = rndv_sends_.find(ats->first);
  if (it == rndv_sends_.end()) {
    MC_LOG(debug) << "ucp: rendezvous " << ats->first << " acknowledged after it ended";
    return;
  }
  it->second->acked(ats->second);
}

Result<EndpointImpl*> WorkerImpl::reply_ep(uint64_t uuid, std::span<const uint8_t> address) {
  auto it = reply_eps_.find(uuid);
  if (it != reply_eps_.end()) return it->second.get();
  MC_ASSIGN_OR_RETURN(std::unique_ptr<EndpointImpl> ep, ep_create(address));
  EndpointImpl* raw = ep.get();
  reply_eps_.emplace(uuid, std::move(ep));
  return raw;
}

void WorkerImpl::send_ats(EndpointImpl* ep, uint64_t rndv_id, Status status) {
  if (ep->send_ctrl(proto::kAmIdAts, ats_pack(rndv_id, status)) != Status::Ok) {
    MC_LOG(error) << "ucp: cannot acknowledge rendezvous " << rndv_id << ": no active-message lane";
  }
}

void WorkerImpl::start_rndv_recvs() {
  std::vector<std::vector<uint8_t>> pending;
  pending.swap(pending_rts_);
  for (const std::vector<uint8_t>& bytes : pending) start_rndv_recv(bytes);
}

void WorkerImpl::start_rndv_recv(std::span<const uint8_t> bytes) {
  std::string why;
  Result<RndvRts> rts = rts_unpack(bytes, &why);
  if (!rts.ok()) {
    MC_LOG(error) << "ucp: dropped a rendezvous request to send: " << why;
    return;
  }
  Result<EndpointImpl*> ep = reply_ep(rts->sender_uuid, rts->address);
  if (!ep.ok()) {
    MC_LOG(error) << "ucp: dropped rendezvous " << rts->rndv_id << " of " << rts->length
                  << " bytes: no endpoint back to its sender: " << ucs::status_string(ep.status());
    return;  // the sender's deadline ends its request
  }
  auto recv = std::make_unique<RndvRecv>();
  RndvRecv* r = recv.get();
  r->ep = *ep;
  r->rts = std::move(*rts);
  Result<std::unique_ptr<Rkey>> rkey = r->ep->rkey_unpack(r->rts.rkey);
  if (!rkey.ok()) return send_ats(r->ep, r->rts.rndv_id, rkey.status());
  r->rkey = std::move(*rkey);
  r->buffer.reset(new (std::nothrow) uint8_t[r->rts.length]);
  if (!r->buffer) {
    MC_LOG(error) << "ucp: cannot allocate " << r->rts.length << " bytes for rendezvous "
                  << r->rts.rndv_id;
    return send_ats(r->ep, r->rts.rndv_id, Status::NoMemory);
  }
  RequestParams params;
  params.callback = [this, r](Status s) { finish_rndv_recv(r, s); };
  rndv_recvs_.push_back(std::move(recv));
  Result<std::shared_ptr<Request>> get =
      r->ep->get_nbx(r->buffer.get(), r->rts.length, r->rts.remote_addr, *r->rkey, params);
  if (!get.ok()) {
    r->done = true;
    return send_ats(r->ep, r->rts.rndv_id, get.status());
  }
  r->get = std::move(*get);
}

void WorkerImpl::finish_rndv_recv(RndvRecv* r, Status status) {
  r->done = true;
  if (closing_) return;
  if (status == Status::Ok) {
    deliver(r->rts.am_id, r->buffer.get(), r->rts.length);
  } else {
    MC_LOG(error) << "ucp: rendezvous " << r->rts.rndv_id << " of " << r->rts.length
                  << " bytes failed to get its payload: " << ucs::status_string(status);
  }
  r->buffer.reset();
  send_ats(r->ep, r->rts.rndv_id, status);
}

void WorkerImpl::reap_rndv_recvs() {
  std::erase_if(rndv_recvs_, [](const std::unique_ptr<RndvRecv>& r) {
    return r->done && (!r->get || r->get->settled());
  });
}

void WorkerImpl::close_rndv() {
  closing_ = true;
  for (auto& [id, op] : rndv_sends_) op->detach_worker();
  rndv_sends_.clear();
}

}  // namespace mc::ucp
