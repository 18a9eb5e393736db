// SPDX-License-Identifier: Apache-2.0
// Rendezvous, the sender's side: EndpointImpl::rndv_send registers the buffer
// (unless the caller's registration covers it) and sends a request to send
// carrying its rkey over the AM lane (proto/rndv.h); the request completes
// with the receiver's acknowledgement (core/worker_rndv.cc).
#include "ucp/core/endpoint.h"
#include "ucp/core/worker.h"
#include "ucp/proto/am_wire.h"
#include "ucp/proto/rndv.h"
#include "ucs/log/log.h"

namespace mc::ucp {

Result<std::shared_ptr<Request>> EndpointImpl::rndv_send(uint16_t id, const void* buffer,
                                                         size_t length, const RequestParams& params,
                                                         size_t am_lane) {
  std::unique_ptr<MemHandle> own;
  const MemHandle* memh = params.memh;
  if (!memh || !memh->contains(buffer, length)) {
    Result<std::unique_ptr<MemHandle>> m =
        MemHandle::map(worker_->context(), const_cast<void*>(buffer), length);
    if (!m.ok()) return m.status();
    own = std::move(*m);
    memh = own.get();
  }
  Result<std::vector<uint8_t>> rkey = memh->rkey_pack();
  if (!rkey.ok()) return rkey.status();
  RndvRts rts;
  rts.am_id = id;
  rts.sender_uuid = worker_->uuid();
  rts.rndv_id = worker_->new_rndv_id();
  rts.length = length;
  rts.remote_addr = reinterpret_cast<uintptr_t>(buffer);
  rts.address = worker_->address();
  rts.rkey = std::move(*rkey);
  std::vector<uint8_t> bytes = rts_pack(rts);
  const uct::IfaceAttr& a = runtime_[am_lane].attr;
  if (!(a.cap & uct::kCapAmBcopy) || bytes.size() > a.am.max_bcopy) {
    MC_LOG(debug) << "ucp: a request to send of " << bytes.size() << " bytes does not fit lane "
                  << am_lane << ": eager instead";
    return Status::Unsupported;
  }
  auto ctrl = std::make_unique<CtrlSendOp>(&runtime_, am_lane, proto::kAmIdRts, std::move(bytes));
  auto op = std::make_unique<RndvSendOp>(worker_, rts.rndv_id, std::move(own), std::move(ctrl));
  worker_->add_rndv_send(rts.rndv_id, op.get());
  return worker_->submit(std::move(op), params, this);
}

Status EndpointImpl::send_ctrl(uint8_t uct_id, std::vector<uint8_t> bytes) {
  const int lane = am_lane();
  if (lane < 0) return Status::Unsupported;
  worker_->submit(
      std::make_unique<CtrlSendOp>(&runtime_, static_cast<size_t>(lane), uct_id, std::move(bytes)),
      RequestParams{}, this);
  return Status::Ok;
}

}  // namespace mc::ucp
