// SPDX-License-Identifier: Apache-2.0
// SieveCache: a bounded key/value cache with SIEVE eviction (Zhang et al.,
// "SIEVE is Simpler than LRU", NSDI'24); the default endpoint store.
#pragma once

#include <cstddef>
#include <functional>
#include <unordered_map>
#include <utility>

namespace mc::ucs {

/// A cache of at most capacity() entries. Entries sit in a queue, newest at
/// the head; a hit only sets the entry's visited bit (no reordering). To make
/// room, a "hand" walks from where it last stopped (initially the tail)
/// towards the head, wrapping to the tail, clearing visited bits, and evicts
/// the first unvisited entry; the hand then rests on that entry's newer
/// neighbour. New entries go to the head, unvisited.
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
class SieveCache {
 public:
  /// Called with the key and value of an entry leaving the cache on its
  /// own; the value may be moved from.
  using EvictCallback = std::function<void(const K& key, V& value)>;

  /// A cache holding up to `capacity` entries (0 is taken as 1), calling
  /// `on_evict` (may be empty) for each value it drops.
  explicit SieveCache(size_t capacity, EvictCallback on_evict = {})
      : capacity_(capacity == 0 ? 1 : capacity), on_evict_(std::move(on_evict)) {}

  SieveCache(const SieveCache&) = delete;
  SieveCache& operator=(const SieveCache&) = delete;

  /// The value of `key`, marked visited, or nullptr when absent.
  V* get(const K& key) {
    auto it = map_.find(key);
    if (it == map_.end()) return nullptr;
    it->second.visited = true;
    return &it->second.value;
  }

  /// True when `key` is cached; does not mark it visited.
  bool contains(const K& key) const { return map_.count(key) != 0; }

  /// Stores `value` under `key` and returns a pointer to the stored value.
  /// A new key goes to the head, unvisited, after evicting one entry when
  /// the cache is full. An existing key keeps its place and is marked
  /// visited; its old value goes to the eviction callback, then is replaced.
  V* insert(K key, V value) {
    auto it = map_.find(key);
    if (it != map_.end()) {
      Node& n = it->second;
      if (on_evict_) on_evict_(it->first, n.value);
      n.value = std::move(value);
      n.visited = true;
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
    head_ = tail_ = hand_ = nullptr;
  }

  /// Calls `fn(const K&, V&)` on every entry, newest first, without marking
  /// any visited. `fn` must not insert or erase.
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
    bool visited = false;
  };

  // SIEVE's eviction: the hand sweeps tail -> head, wrapping, giving each
  // visited entry a second chance. Precondition: the cache is not empty.
  void evict() {
    Node* n = hand_ != nullptr ? hand_ : tail_;
    while (n->visited) {
      n->visited = false;
      n = n->newer != nullptr ? n->newer : tail_;
    }
    hand_ = n;
    unlink(n);  // moves the hand to n's newer neighbour
    auto it = map_.find(*n->key);
    if (on_evict_) on_evict_(it->first, it->second.value);
    map_.erase(it);
  }

  void unlink(Node* n) {
    if (hand_ == n) hand_ = n->newer;
    (n->newer != nullptr ? n->newer->older : head_) = n->older;
    (n->older != nullptr ? n->older->newer : tail_) = n->newer;
  }

  size_t capacity_;
  EvictCallback on_evict_;
  std::unordered_map<K, Node, Hash, KeyEqual> map_;
  Node* head_ = nullptr;  ///< newest
  Node* tail_ = nullptr;  ///< oldest
  Node* hand_ = nullptr;  ///< next eviction candidate; null: start at the tail
};

}  // namespace mc::ucs
