// SPDX-License-Identifier: Apache-2.0
// FifoCache: a bounded key/value cache that evicts the oldest insertion;
// the simple alternative to SieveCache for endpoint stores.
#pragma once

#include <cstddef>
#include <functional>
#include <unordered_map>
#include <utility>

namespace mc::ucs {

/// A cache of at most capacity() entries that, when full, evicts the entry
/// inserted longest ago; lookups do not change the order.
///
/// The eviction callback receives every value the cache drops on its own:
/// an entry evicted to make room, and the old value of a key that insert()
/// replaces. erase() and clear() are the caller's own removals and call no
/// callback; use for_each() first to release values before clear().
///
/// Not thread-safe: the owner serialises every call (the endpoint store
/// wraps the cache with its lock). Callbacks must not call into the cache.
/// Value pointers stay valid until that entry leaves the cache.
template <typename K, typename V, typename Hash = std::hash<K>,
          typename KeyEqual = std::equal_to<K>>
class FifoCache {
 public:
  /// Called with the key and value of an entry leaving the cache on its
  /// own; the value may be moved from.
  using EvictCallback = std::function<void(const K& key, V& value)>;

  /// A cache holding up to `capacity` entries (0 is taken as 1), calling
  /// `on_evict` (may be empty) for each value it drops.
  explicit FifoCache(size_t capacity, EvictCallback on_evict = {})
      : capacity_(capacity == 0 ? 1 : capacity), on_evict_(std::move(on_evict)) {}

  FifoCache(const FifoCache&) = delete;
  FifoCache& operator=(const FifoCache&) = delete;

  /// The value of `key`, or nullptr when absent. The order is unchanged.
  V* get(const K& key) {
    auto it = map_.find(key);
    return it == map_.end() ? nullptr : &it->second.value;
  }

  /// True when `key` is cached.
  bool contains(const K& key) const { return map_.count(key) != 0; }

  /// Stores `value` under `key` and returns a pointer to the stored value.
  /// A new key becomes the newest entry, after evicting the oldest when the
  /// cache is full. An existing key keeps its place; its old value goes to
  /// the eviction callback, then is replaced.
  V* insert(K key, V value) {
    auto it = map_.find(key);
    if (it != map_.end()) {
      Node& n = it->second;
      if (on_evict_) on_evict_(it->first, n.value);
      n.value = std::move(value);
      return &n.value;
    }
    if (map_.size() >= capacity_) evict();
    it = map_.try_emplace(std::move(key), std::move(value)).first;
    Node& n = it->second;
    n.key = &it->first;
    n.older = head_;
    if (head_ != nullptr) head_->newer = &n;
    head_ = &n;
    if (tail_ == nullptr) tail_ = &n;
    return &n.value;
  }

  /// Removes `key` without calling the eviction callback. Returns false
  /// when it was absent.
  bool erase(const K& key) {
    auto it = map_.find(key);
    if (it == map_.end()) return false;
    unlink(&it->second);
    map_.erase(it);
    return true;
  }

  /// Removes every entry without calling the eviction callback.
  void clear() {
    map_.clear();
    head_ = tail_ = nullptr;
  }

  /// Calls `fn(const K&, V&)` on every entry, newest first. `fn` must not
  /// insert or erase.
  template <typename Fn>
  void for_each(Fn&& fn) {
    for (Node* n = head_; n != nullptr; n = n->older) fn(*n->key, n->value);
  }

  /// Entries cached now.
  size_t size() const { return map_.size(); }
  /// True when no entry is cached.
  bool empty() const { return map_.empty(); }
  /// Most entries the cache holds.
  size_t capacity() const { return capacity_; }

 private:
  struct Node {
    explicit Node(V&& v) : value(std::move(v)) {}
    V value;
    const K* key = nullptr;  ///< the map's key; map nodes never move
    Node* newer = nullptr;   ///< towards the head
    Node* older = nullptr;   ///< towards the tail
  };

  // Precondition: the cache is not empty.
  void evict() {
    Node* n = tail_;
    unlink(n);
    auto it = map_.find(*n->key);
    if (on_evict_) on_evict_(it->first, it->second.value);
    map_.erase(it);
  }

  void unlink(Node* n) {
    (n->newer != nullptr ? n->newer->older : head_) = n->older;
    (n->older != nullptr ? n->older->newer : tail_) = n->newer;
  }

  size_t capacity_;
  EvictCallback on_evict_;
  std::unordered_map<K, Node, Hash, KeyEqual> map_;
  Node* head_ = nullptr;  ///< newest
  Node* tail_ = nullptr;  ///< oldest
};

}  // namespace mc::ucs
