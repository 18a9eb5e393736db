// SPDX-License-Identifier: Apache-2.0
// Process-wide registration table.
#include "uct/sm/sm_region.h"

namespace mc::uct::sm {

RegionTable& RegionTable::instance() {
  static RegionTable* table = new RegionTable();  // outlives every md and handle
  return *table;
}

uint64_t RegionTable::add(const Region& region) {
  std::lock_guard guard(lock_);
  const uint64_t id = next_id_++;
  regions_[id] = region;
  return id;
}

void RegionTable::remove(uint64_t id) {
  std::lock_guard guard(lock_);
  regions_.erase(id);
}

ucs::Status RegionTable::with_range(uint64_t id, uint64_t addr, size_t len, unsigned access,
                                    const std::function<void(uint8_t*)>& fn, const char** why) {
  std::lock_guard guard(lock_);
  auto it = regions_.find(id);
  if (it == regions_.end()) {
    *why = "the memory is not registered (or was deregistered)";
    return ucs::Status::Rejected;
  }
  const Region& r = it->second;
  if ((r.access & access) != access) {
    *why = "the registration does not allow this remote access";
    return ucs::Status::Rejected;
  }
  if (addr < r.base || len > r.length || addr - r.base > r.length - len) {
    *why = "the range is outside the registration";
    return ucs::Status::Rejected;
  }
  fn(reinterpret_cast<uint8_t*>(addr));
  return ucs::Status::Ok;
}

}  // namespace mc::uct::sm
