// SPDX-License-Identifier: Apache-2.0
// The cache of mapped exports.
#include "uct/cuda/cuda_ipc/cuda_ipc_cache.h"

#include <algorithm>
#include <vector>

namespace mc::uct::cuda {

ucs::Result<std::shared_ptr<IpcMapping>> IpcMappingCache::get(const std::string& socket,
                                                             uint64_t export_id,
                                                             const Opener& open) {
  const Key key{socket, export_id};
  {
    std::lock_guard guard(lock_);
    auto it = entries_.find(key);
    if (it != entries_.end()) {
      ++hits_;
      order_.remove(key);
      order_.push_back(key);
      return it->second;
    }
  }
  // Opened without the lock: it talks to the owner and the driver.
  MC_ASSIGN_OR_RETURN(std::shared_ptr<IpcMapping> m, open());
  ++opens_;
  std::lock_guard guard(lock_);
  auto [it, inserted] = entries_.emplace(key, m);
  if (!inserted) return it->second;  // another thread mapped it meanwhile: ours closes
  order_.push_back(key);
  trim(key);
  return m;
}

void IpcMappingCache::trim(const Key& added) {
  // `added` is held by its caller now; it counts as unused, as it will be
  // once that rkey goes, but is not closed here.
  size_t unused = 1;
  for (const auto& [k, m] : entries_) unused += k != added && m.use_count() == 1 ? 1 : 0;
  for (auto it = order_.begin(); unused > max_unused_ && it != order_.end();) {
    auto e = entries_.find(*it);
    if (e != entries_.end() && *it != added && e->second.use_count() == 1) {
      entries_.erase(e);
      it = order_.erase(it);
      --unused;
    } else {
      ++it;
    }
  }
}

void IpcMappingCache::invalidate(const std::string& socket, uint64_t export_id,
                                 const std::string& why) {
  std::vector<std::shared_ptr<IpcMapping>> dropped;  // closed after the lock
  std::lock_guard guard(lock_);
  for (auto it = entries_.begin(); it != entries_.end();) {
    if (it->first.first == socket && (export_id == 0 || it->first.second == export_id)) {
      it->second->mark_stale(why);
      dropped.push_back(std::move(it->second));
      order_.remove(it->first);
      it = entries_.erase(it);
      ++invalidations_;
    } else {
      ++it;
    }
  }
}

size_t IpcMappingCache::size() const {
  std::lock_guard guard(lock_);
  return entries_.size();
}

}  // namespace mc::uct::cuda
