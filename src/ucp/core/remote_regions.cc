// SPDX-License-Identifier: Apache-2.0
// RemoteRegions: add, remove and the bounds check.
#include "ucp/core/remote_regions.h"

namespace mc::ucp {

uint64_t RemoteRegions::add(uint64_t base, uint64_t length, uct::MemType mem) {
  std::lock_guard guard(mu_);
  const uint64_t id = next_id_++;
  regions_.emplace(id, Region{base, length, mem});
  return id;
}

void RemoteRegions::remove(uint64_t id) {
  std::lock_guard guard(mu_);
  regions_.erase(id);
}

std::optional<uct::MemType> RemoteRegions::find(uint64_t addr, uint64_t length) const {
  if (length == 0 || addr + length < addr) return std::nullopt;
  std::lock_guard guard(mu_);
  // Few registrations live at once (GPU buffers): a scan is enough.
  for (const auto& [id, r] : regions_) {
    if (addr >= r.base && length <= r.length && addr - r.base <= r.length - length) return r.mem;
  }
  return std::nullopt;
}

}  // namespace mc::ucp
