// SPDX-License-Identifier: Apache-2.0
// The endpoint's staged puts and gets: memory no lane can access goes
// through host bounce buffers (rma_staged: a StagingOp whose network stage
// is staging_network, the registered host table's protocol per fragment),
// and a peer's memory no lane's key reaches is staged by the peer
// (rma_remote_staged, over the worker's RemoteStaging,
// core/worker_remote_staging.cc).
#include "ucp/core/endpoint.h"
#include "ucp/core/worker.h"
#include "ucp/proto/remote_staging.h"
#include "ucp/proto/rma_op.h"
#include "ucp/proto/staging_op.h"
#include "ucp/proto/staging_pool.h"
#include "ucs/log/log.h"

namespace mc::ucp {

Result<std::shared_ptr<Request>> EndpointImpl::rma_staged(proto::Op op,
                                                          const proto::Staging& staging,
                                                          void* buffer, size_t length,
                                                          uint64_t remote_addr, const Rkey& rkey,
                                                          const RequestParams& params) {
  MC_ASSIGN_OR_RETURN(StagingPath path, worker_->staging_path(staging));
  proto::StagingParams p = path.params(op, buffer, length, remote_addr, params.memh);
  // The rails are read now, as the caller's copy may go.
  std::shared_ptr<RailPreference> rails = params.rails && !params.rails->empty()
                                              ? std::make_shared<RailPreference>(*params.rails)
                                              : nullptr;
  p.network = staging_network(op, rkey, &path.pool->memh(), std::move(rails));
  return worker_->submit(std::make_unique<proto::StagingOp>(std::move(p)), params, this);
}

proto::StagingNetwork EndpointImpl::staging_network(proto::Op op, const Rkey& rkey,
                                                    const MemHandle* bounce_memh,
                                                    std::shared_ptr<RailPreference> rails) {
  // Each fragment goes by the registered host table (the pool is
  // registered).
  return
      [this, op, &rkey, rails, bounce_memh](
          void* bounce, size_t len, uint64_t raddr) -> Result<std::unique_ptr<proto::RequestOp>> {
        const proto::ProtoRange* range = protocols_->table(op, true).lookup(len);
        if (!range) return no_protocol(op, uct::MemType::Host);
        proto::RmaParams rp =
            rma_params(op, *range, bounce, len, raddr, rkey, bounce_memh, rails.get());
        return std::unique_ptr<proto::RequestOp>(new proto::RmaOp(&runtime_, std::move(rp)));
      };
}

Result<std::shared_ptr<Request>> EndpointImpl::rma_remote_staged(proto::Op op,
                                                                 const proto::Staging* staging,
                                                                 void* buffer, size_t length,
                                                                 uint64_t remote_addr,
                                                                 const RequestParams& params) {
  RemoteStaging& rs = worker_->remote_staging();
  if (!staging) {
    MC_ASSIGN_OR_RETURN(std::unique_ptr<proto::RequestOp> rop,
                        rs.make_op(*this, op, buffer, length, remote_addr, params.memh));
    return worker_->submit(std::move(rop), params, this);
  }
  // Local GPU memory too: staged here into bounce buffers, each fragment
  // staged again by the peer.
  MC_ASSIGN_OR_RETURN(StagingPath path, worker_->staging_path(*staging));
  proto::StagingParams p = path.params(op, buffer, length, remote_addr, params.memh);
  const MemHandle* bounce_memh = &path.pool->memh();
  p.network = [this, &rs, op, bounce_memh](
                  void* bounce, size_t len,
                  uint64_t raddr) -> Result<std::unique_ptr<proto::RequestOp>> {
    return rs.make_op(*this, op, bounce, len, raddr, bounce_memh);
  };
  return worker_->submit(std::make_unique<proto::StagingOp>(std::move(p)), params, this);
}

}  // namespace mc::ucp
