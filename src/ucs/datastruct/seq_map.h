// SPDX-License-Identifier: Apache-2.0
// SeqMap: a map from increasing sequence numbers to values, kept in a ring
// that allocates only when it grows: a transport's operations in flight, by
// the number they were posted under.
#pragma once

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace mc::ucs {

/// Values under keys that only grow: each insert() names a key greater than
/// every key inserted before, and entries leave in any order. Lookups and
/// erasures find a key at once while the keys in the ring are consecutive,
/// else by binary search; the smallest key left is at the front.
///
/// An erased entry stays in the ring until every key before it is erased
/// too. When the ring is full and at most half of it is live, insert()
/// packs the live entries instead of growing, so the ring holds at most
/// about twice the most entries ever live at once, however long the oldest
/// one stays. After the first growth to that size nothing is allocated.
///
/// Not thread-safe: the owner serialises every call. A value's pointer
/// stays valid until the next insert() or clear(), or the erasure of its key.
template <typename V>
class SeqMap {
 public:
  SeqMap() = default;
  SeqMap(const SeqMap&) = delete;
  SeqMap& operator=(const SeqMap&) = delete;

  /// Adds `value` under `key`, which must be greater than every key added
  /// before (checked in debug builds); returns the stored value.
  V* insert(uint64_t key, V value = V{}) {
    assert(count_ == 0 || key > slot(count_ - 1).key);
    if (count_ == slots_.size()) {
      if (count_ > 0 && live_ * 2 <= count_) {
        pack();
      } else {
        grow();
      }
    }
    Slot& s = slot(count_++);
    s.key = key;
    s.live = true;
    s.value = std::move(value);
    ++live_;
    return &s.value;
  }

  /// The value under `key`, or nullptr when there is none.
  V* find(uint64_t key) {
    const size_t pos = position(key);
    return pos == kNone ? nullptr : &slot(pos).value;
  }

  /// Removes `key`; returns false when there was none. The value is
  /// replaced by V{}, so what it owned is released now.
  bool erase(uint64_t key) {
    const size_t pos = position(key);
    if (pos == kNone) return false;
    Slot& s = slot(pos);
    s.live = false;
    s.value = V{};
    --live_;
    while (count_ > 0 && !slot(0).live) {
      head_ = (head_ + 1) & (slots_.size() - 1);
      --count_;
    }
    return true;
  }

  /// Entries held.
  size_t size() const { return live_; }
  /// Slots in the ring, held or not.
  size_t capacity() const { return slots_.size(); }
  bool empty() const { return live_ == 0; }
  /// The smallest key held; the map must not be empty.
  uint64_t min_key() const {
    assert(live_ > 0);
    return slots_[head_].key;
  }

  /// Calls f(key, value) for every entry, smallest key first. `f` must not
  /// insert or erase.
  template <typename F>
  void for_each(F&& f) {
    for (size_t i = 0; i < count_; ++i) {
      Slot& s = slot(i);
      if (s.live) f(s.key, s.value);
    }
  }

  /// Removes every entry; the ring keeps its size.
  void clear() {
    for (size_t i = 0; i < count_; ++i) slot(i) = Slot{};
    head_ = count_ = live_ = 0;
  }

 private:
  struct Slot {
    uint64_t key = 0;
    bool live = false;
    V value{};
  };
  static constexpr size_t kNone = SIZE_MAX;

  Slot& slot(size_t i) { return slots_[(head_ + i) & (slots_.size() - 1)]; }
  const Slot& slot(size_t i) const { return slots_[(head_ + i) & (slots_.size() - 1)]; }

  /// Where `key` is held live, or kNone.
  size_t position(uint64_t key) const {
    if (live_ == 0 || key < slot(0).key || key > slot(count_ - 1).key) return kNone;
    size_t pos = key - slot(0).key;  // right while the keys are consecutive
    if (pos >= count_ || slot(pos).key != key) {
      size_t lo = 0, hi = count_;
      while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        if (slot(mid).key < key) {
          lo = mid + 1;
        } else {
          hi = mid;
        }
      }
      pos = lo;
      if (pos >= count_ || slot(pos).key != key) return kNone;
    }
    return slot(pos).live ? pos : kNone;
  }

  /// Moves the live entries to the front of the ring, in order.
  void pack() {
    size_t w = 0;
    for (size_t i = 0; i < count_; ++i) {
      if (!slot(i).live) continue;
      if (w != i) slot(w) = std::move(slot(i));
      ++w;
    }
    for (size_t i = w; i < count_; ++i) slot(i) = Slot{};
    count_ = w;
  }

  /// Doubles the ring (8 slots at first), keeping the order.
  void grow() {
    std::vector<Slot> bigger(slots_.empty() ? 8 : slots_.size() * 2);
    for (size_t i = 0; i < count_; ++i) bigger[i] = std::move(slot(i));
    slots_ = std::move(bigger);
    head_ = 0;
  }

  std::vector<Slot> slots_;  ///< a power of two in size, or empty
  size_t head_ = 0;          ///< index of the smallest key's slot
  size_t count_ = 0;         ///< slots from head_ in use, live or erased
  size_t live_ = 0;
};

}  // namespace mc::ucs
