// SPDX-License-Identifier: Apache-2.0
// Worker: what the staging protocol needs of it: memory-type endpoints to
// itself, bounce-buffer pools, and memory-type detection.
#include <algorithm>

#include "ucp/api/worker.h"
#include "ucp/proto/ep_protocols.h"
#include "ucp/proto/staging_pool.h"
#include "ucs/log/log.h"

namespace mc::ucp {

Result<uct::Endpoint*> Worker::memtype_ep(size_t resource) {
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

Result<std::shared_ptr<proto::StagingPool>> Worker::staging_pool(size_t frag_size, size_t count) {
  auto it = staging_pools_.find(frag_size);
  if (it != staging_pools_.end()) return it->second;
  MC_ASSIGN_OR_RETURN(std::shared_ptr<proto::StagingPool> pool,
                      proto::StagingPool::create(*context_, frag_size, count));
  staging_pools_.emplace(frag_size, pool);
  return pool;
}

Result<StagingPath> Worker::staging_path(uct::MemType mem) {
  std::unique_lock guard = lock();
  const int r = proto::staging_resource(local_, mem);
  if (r < 0 || mem == uct::MemType::Host) return Status::Unsupported;
  StagingPath p;
  p.resource = static_cast<size_t>(r);
  p.name = local_[p.resource].name();
  p.copy_md_index = context_->resources()[p.resource].md_index;
  p.copy_md = context_->mds()[p.copy_md_index].md.get();
  // As EpProtocols::build: a fragment is one zero-copy operation of the copy
  // transport, so that the pool is shared with the staged requests.
  const uct::IfaceAttr& a = local_[p.resource].attr;
  p.frag_size =
      std::min({rndv_frag_size(context_->config(), mem), a.put.max_zcopy, a.get.max_zcopy});
  p.depth = std::max<size_t>(context_->config().staging_depth, 1);
  if (p.frag_size == 0) return Status::Unsupported;
  MC_ASSIGN_OR_RETURN(p.copy_ep, memtype_ep(p.resource));
  MC_ASSIGN_OR_RETURN(p.pool, staging_pool(p.frag_size, p.depth));
  return p;
}

uct::MemType Worker::detect_mem_type(const void* buffer, size_t length) const {
  for (const MdEntry& md : context_->mds()) {
    if (md.attr.detect_mem_types == 0) continue;
    const uct::MemType t = md.md->detect_mem_type(buffer, length);
    if (t != uct::MemType::Host && t != uct::MemType::Unknown) return t;
  }
  return uct::MemType::Host;
}

}  // namespace mc::ucp
