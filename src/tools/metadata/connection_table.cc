// SPDX-License-Identifier: Apache-2.0
// The connection caps of mc_metadata_server and the eviction of idle ones.
#include "tools/metadata/connection_table.h"

#include <sys/socket.h>

namespace mc::tools::metadata {

uint64_t ConnectionTable::add(int fd, const std::string& peer, bool* evicted) {
  std::lock_guard<std::mutex> guard(lock_);
  *evicted = false;
  const auto count = live_per_peer_.find(peer);
  if (count != live_per_peer_.end() && count->second >= max_per_peer_) {
    const auto victim = oldest_idle(&peer);
    if (victim == entries_.end()) return 0;
    evict(victim);
    *evicted = true;
  }
  // After an eviction above, live_ < max_connections_ already.
  if (live_ >= max_connections_) {
    const auto victim = oldest_idle(nullptr);
    if (victim == entries_.end()) return 0;
    evict(victim);
    *evicted = true;
  }
  const uint64_t id = next_id_++;
  Entry& e = entries_[id];
  e.fd = fd;
  e.peer = peer;
  e.idle_since = ++stamp_;
  ++live_per_peer_[peer];
  ++live_;
  return id;
}

bool ConnectionTable::set_busy(uint64_t id) {
  std::lock_guard<std::mutex> guard(lock_);
  const auto it = entries_.find(id);
  if (it == entries_.end() || it->second.evicted) return false;
  it->second.busy = true;
  return true;
}

void ConnectionTable::set_idle(uint64_t id) {
  std::lock_guard<std::mutex> guard(lock_);
  const auto it = entries_.find(id);
  if (it == entries_.end()) return;
  it->second.busy = false;
  it->second.idle_since = ++stamp_;
}

void ConnectionTable::remove(uint64_t id) {
  std::lock_guard<std::mutex> guard(lock_);
  const auto it = entries_.find(id);
  if (it == entries_.end()) return;
  if (!it->second.evicted) {
    // Counted as gone already when evicted.
    const auto count = live_per_peer_.find(it->second.peer);
    if (--count->second == 0) live_per_peer_.erase(count);
    --live_;
  }
  entries_.erase(it);
}

ConnectionTable::Entries::iterator ConnectionTable::oldest_idle(const std::string* peer) {
  auto best = entries_.end();
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    const Entry& e = it->second;
    if (e.busy || e.evicted || (peer != nullptr && e.peer != *peer)) continue;
    if (best == entries_.end() || e.idle_since < best->second.idle_since) best = it;
  }
  return best;
}

void ConnectionTable::evict(Entries::iterator it) {
  Entry& e = it->second;
  shutdown(e.fd, SHUT_RDWR);
  e.evicted = true;
  const auto count = live_per_peer_.find(e.peer);
  if (--count->second == 0) live_per_peer_.erase(count);
  --live_;
}

}  // namespace mc::tools::metadata
