// SPDX-License-Identifier: Apache-2.0
// The endpoint store (see endpoint_store.h).
#include "ucp/te/endpoint_store.h"

#include <algorithm>

#include "ucs/log/log.h"

namespace mc::te {

EndpointStore::EndpointStore(EndpointStoreType type, size_t capacity) {
  auto on_evict = [this](const int32_t& segment, Entry& entry) {
    MC_LOG(debug) << "endpoint store: evicting the endpoint of segment " << segment << " ("
                  << entry->inflight << " operations in flight drain first)";
    counters_.evicted++;
    counters_.evicted_busy += entry->inflight > 0 ? 1 : 0;
    retire(entry);
  };
  if (type == EndpointStoreType::Fifo) {
    cache_ = std::make_unique<Fifo>(capacity, on_evict);
  } else {
    cache_ = std::make_unique<Sieve>(capacity, on_evict);
  }
}

void EndpointStore::retire(Entry& entry) {
  if (entry) retired_.push_back(std::move(entry));
}

EndpointStore::Entry EndpointStore::get(int32_t segment) {
  return std::visit(
      [&](auto& c) -> Entry {
        Entry* e = c->get(segment);
        return e ? *e : nullptr;
      },
      cache_);
}

void EndpointStore::insert(int32_t segment, Entry entry) {
  counters_.inserted++;
  std::visit([&](auto& c) { c->insert(segment, std::move(entry)); }, cache_);
}

void EndpointStore::remove(int32_t segment) {
  std::visit(
      [&](auto& c) {
        Entry* e = c->get(segment);
        if (e == nullptr) return;
        Entry taken = std::move(*e);
        c->erase(segment);
        counters_.removed++;
        retire(taken);
      },
      cache_);
}

size_t EndpointStore::size() const {
  return std::visit([](const auto& c) { return c->size(); }, cache_);
}

size_t EndpointStore::reap() {
  std::erase_if(retired_, [](const Entry& e) { return e->inflight == 0; });
  return retired_.size();
}

void EndpointStore::retire_all() {
  std::visit(
      [&](auto& c) {
        c->for_each([&](const int32_t&, Entry& e) { retire(e); });
        c->clear();
      },
      cache_);
}

}  // namespace mc::te
