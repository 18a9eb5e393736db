// SPDX-License-Identifier: Apache-2.0
// Worker: what the staging protocol needs of it: memory-type endpoints to
// itself, bounce-buffer pools, and memory-type detection.
#include <algorithm>

#include "ucp/core/worker.h"
#include "ucp/proto/ep_protocols.h"
#include "ucp/proto/staging_pool.h"
#include "ucs/log/log.h"

namespace mc::ucp {

Result<uct::Endpoint*> WorkerImpl::memtype_ep(size_t resource) {
  auto it = memtype_eps_.find(resource);
  if (it != memtype_eps_.end()) return it->second.get();
  const int k = iface_of(resource);
  if (k < 0) {
    MC_LOG(error) << "ucp: memory-type transport " << context_->resources()[resource].name()
                  << " has no open iface";
    return Status::NoDevice;
  }
  uct::Iface& iface = *ifaces_[static_cast<size_t>(k)].iface;
  MC_ASSIGN_OR_RETURN(std::unique_ptr<uct::Endpoint> ep,
                      iface.ep_create(iface.device_address(), iface.iface_address()));
  uct::Endpoint* raw = ep.get();
  memtype_eps_.emplace(resource, std::move(ep));
  return raw;
}

Result<std::shared_ptr<proto::StagingPool>> WorkerImpl::staging_pool(size_t frag_size,
                                                                     size_t count) {
  auto it = staging_pools_.find(frag_size);
  if (it != staging_pools_.end()) return it->second;
  MC_ASSIGN_OR_RETURN(std::shared_ptr<proto::StagingPool> pool,
                      proto::StagingPool::create(*context_, frag_size, count));
  staging_pools_.emplace(frag_size, pool);
  return pool;
}

Result<StagingPath> WorkerImpl::staging_path(uct::MemType mem) {
  std::unique_lock guard = lock();
  // The plan of EpProtocols::build, so that the pool is shared with the
  // staged requests.
  const std::optional<proto::Staging> st = proto::plan_staging(
      local_, mem, rndv_frag_size(context_->config(), mem), context_->config().staging_depth);
  if (!st) return Status::Unsupported;
  return staging_path(*st);
}

proto::StagingParams StagingPath::params(proto::Op op, void* buffer, size_t length,
                                         uint64_t remote_addr, const MemHandle* user) const {
  proto::StagingParams p;
  p.op = op;
  p.buffer = buffer;
  p.length = length;
  p.remote_addr = remote_addr;
  p.frag_size = frag_size;
  p.depth = depth;
  p.copy_ep = copy_ep;
  p.copy_md = copy_md;
  p.copy_md_index = copy_md_index;
  p.user_memh = user ? user->uct_memh(copy_md_index) : nullptr;
  p.pool = pool;
  return p;
}

Result<StagingPath> WorkerImpl::staging_path(const proto::Staging& st) {
  StagingPath p;
  p.resource = st.resource;
  p.name = st.name;
  p.copy_md_index = context_->resources()[p.resource].md_index;
  p.copy_md = context_->mds()[p.copy_md_index].md.get();
  p.frag_size = st.frag_size;
  p.depth = st.depth;
  MC_ASSIGN_OR_RETURN(p.copy_ep, memtype_ep(p.resource));
  MC_ASSIGN_OR_RETURN(p.pool, staging_pool(p.frag_size, p.depth));
  return p;
}

uct::MemType WorkerImpl::detect_mem_type(const void* buffer, size_t length) const {
  for (const MdEntry& md : context_->mds()) {
    if (md.attr.detect_mem_types == 0) continue;
    const uct::MemType t = md.md->detect_mem_type(buffer, length);
    if (t != uct::MemType::Host && t != uct::MemType::Unknown) return t;
  }
  return uct::MemType::Host;
}

}  // namespace mc::ucp
