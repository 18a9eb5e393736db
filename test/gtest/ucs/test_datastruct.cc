// SPDX-License-Identifier: Apache-2.0
// SieveCache and FifoCache: exact eviction order against hand-worked
// examples, callbacks, capacity edge cases, erase and reinsertion. SeqMap:
// lookups with and without gaps in the keys, the front after erasures in
// any order, and a ring that packs instead of growing.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ucs/datastruct/fifo_cache.h"
#include "ucs/datastruct/seq_map.h"
#include "ucs/datastruct/sieve_cache.h"

namespace mc::ucs {
namespace {

using Evicted = std::vector<std::pair<std::string, int>>;

template <typename Cache>
std::vector<std::string> keys_newest_first(Cache& cache) {
  std::vector<std::string> keys;
  cache.for_each([&](const std::string& k, int&) { keys.push_back(k); });
  return keys;
}

using Keys = std::vector<std::string>;

// The worked example. Queue shown newest (head) to oldest (tail); * marks a
// visited entry; the hand is shown as ^.
//   insert A B C          C  B  A            hand: none (starts at tail)
//   get A                 C  B  A*
//   insert D: A* -> A, B unvisited: evict B; hand -> C
//                         D  C^ A
//   insert E: C unvisited: evict C; hand -> D
//                         E  D^ A
//   get A, get D          E  D*^ A*
//   insert F: D* -> D, E unvisited: evict E; E was the head: hand -> none
//                         F  D  A*
//   insert G: from tail: A* -> A, D unvisited: evict D; hand -> F
//                         G  F^ A
//   insert H: F unvisited: evict F; hand -> G
//                         H  G^ A
// Evicted: B C E D F. (FIFO would evict A B C D E.)
TEST(SieveCache, EvictionOrderMatchesWorkedExample) {
  Evicted evicted;
  SieveCache<std::string, int> cache(
      3, [&](const std::string& k, int& v) { evicted.emplace_back(k, v); });
  cache.insert("A", 1);
  cache.insert("B", 2);
  cache.insert("C", 3);
  EXPECT_TRUE(evicted.empty());
  ASSERT_NE(cache.get("A"), nullptr);

  cache.insert("D", 4);
  EXPECT_EQ(evicted, (Evicted{{"B", 2}}));
  EXPECT_EQ(keys_newest_first(cache), (Keys{"D", "C", "A"}));

  cache.insert("E", 5);
  EXPECT_EQ(evicted.back(), (std::pair<std::string, int>{"C", 3}));
  EXPECT_EQ(keys_newest_first(cache), (Keys{"E", "D", "A"}));

  ASSERT_NE(cache.get("A"), nullptr);
  ASSERT_NE(cache.get("D"), nullptr);
  cache.insert("F", 6);
  EXPECT_EQ(evicted.back().first, "E");
  EXPECT_EQ(keys_newest_first(cache), (Keys{"F", "D", "A"}));

  cache.insert("G", 7);
  EXPECT_EQ(evicted.back().first, "D");
  EXPECT_EQ(keys_newest_first(cache), (Keys{"G", "F", "A"}));

  cache.insert("H", 8);
  EXPECT_EQ(evicted, (Evicted{{"B", 2}, {"C", 3}, {"E", 5}, {"D", 4}, {"F", 6}}));
  EXPECT_EQ(keys_newest_first(cache), (Keys{"H", "G", "A"}));
  EXPECT_EQ(cache.size(), 3u);
  EXPECT_EQ(*cache.get("A"), 1);
}

// All visited: the hand clears every bit, wraps from head to tail, and
// evicts the oldest; it then rests on the next-oldest.
//   insert 1 2 3, get 1 2 3     3* 2* 1*
//   insert 4: 1* 2* 3* cleared, wrap, 1 unvisited: evict 1; hand -> 2
//   insert 5: 2 unvisited: evict 2; hand -> 3
//   get 4; insert 6: 3 unvisited: evict 3; hand -> 4
//   insert 7: 4* -> 4, 5 unvisited: evict 5; hand -> 6
TEST(SieveCache, HandWrapsWhenAllVisited) {
  std::vector<int> evicted;
  SieveCache<int, int> cache(3, [&](const int& k, int&) { evicted.push_back(k); });
  for (int k : {1, 2, 3}) cache.insert(k, k * 10);
  for (int k : {1, 2, 3}) ASSERT_NE(cache.get(k), nullptr);
  cache.insert(4, 40);
  cache.insert(5, 50);
  ASSERT_NE(cache.get(4), nullptr);
  cache.insert(6, 60);
  cache.insert(7, 70);
  EXPECT_EQ(evicted, (std::vector<int>{1, 2, 3, 5}));
  EXPECT_TRUE(cache.contains(4));
  EXPECT_TRUE(cache.contains(6));
  EXPECT_TRUE(cache.contains(7));
}

TEST(SieveCache, ContainsDoesNotMarkVisited) {
  std::vector<int> evicted;
  SieveCache<int, int> cache(2, [&](const int& k, int&) { evicted.push_back(k); });
  cache.insert(1, 1);
  cache.insert(2, 2);
  EXPECT_TRUE(cache.contains(1));
  EXPECT_FALSE(cache.contains(3));
  cache.insert(3, 3);
  EXPECT_EQ(evicted, (std::vector<int>{1}));
}

TEST(SieveCache, MissReturnsNull) {
  SieveCache<int, int> cache(4);
  EXPECT_EQ(cache.get(1), nullptr);
  EXPECT_TRUE(cache.empty());
  int* v = cache.insert(1, 11);
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(*v, 11);
  EXPECT_EQ(cache.get(1), v);
  *v = 12;
  EXPECT_EQ(*cache.get(1), 12);
}

TEST(SieveCache, CapacityOne) {
  Evicted evicted;
  SieveCache<std::string, int> cache(
      1, [&](const std::string& k, int& v) { evicted.emplace_back(k, v); });
  EXPECT_EQ(cache.capacity(), 1u);
  cache.insert("a", 1);
  ASSERT_NE(cache.get("a"), nullptr);  // visited, yet the only candidate
  cache.insert("b", 2);
  EXPECT_EQ(evicted, (Evicted{{"a", 1}}));
  EXPECT_EQ(cache.size(), 1u);
  EXPECT_EQ(*cache.get("b"), 2);
  cache.insert("c", 3);
  EXPECT_EQ(evicted, (Evicted{{"a", 1}, {"b", 2}}));
  EXPECT_FALSE(cache.contains("b"));
}

TEST(SieveCache, CapacityZeroIsOne) {
  SieveCache<int, int> cache(0);
  EXPECT_EQ(cache.capacity(), 1u);
  cache.insert(1, 1);
  cache.insert(2, 2);
  EXPECT_EQ(cache.size(), 1u);
  EXPECT_TRUE(cache.contains(2));
}

TEST(SieveCache, EraseThenReinsert) {
  std::vector<int> evicted;
  SieveCache<int, int> cache(3, [&](const int& k, int&) { evicted.push_back(k); });
  for (int k : {1, 2, 3}) cache.insert(k, k);
  ASSERT_NE(cache.get(1), nullptr);
  EXPECT_TRUE(cache.erase(1));
  EXPECT_FALSE(cache.erase(1));
  EXPECT_FALSE(cache.contains(1));
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_TRUE(evicted.empty());  // erase calls no callback

  // Reinserted, 1 is the newest entry and unvisited: 3 1 ... 2 is oldest.
  cache.insert(1, 100);
  EXPECT_EQ(*cache.get(1), 100);  // visited again
  EXPECT_EQ(cache.size(), 3u);
  cache.insert(4, 4);  // 2 unvisited at the tail: evict 2
  cache.insert(5, 5);  // hand at 3, unvisited: evict 3
  cache.insert(6, 6);  // hand at 1, visited -> cleared; 4 unvisited: evict 4
  EXPECT_EQ(evicted, (std::vector<int>{2, 3, 4}));
}

// Erasing the entry under the hand moves the hand to its newer neighbour.
//   insert A B C, get A; insert D: evicts B, hand on C      D C^ A*
//   erase C: hand -> D                                     D^ A
//   insert E (no eviction)                                 E D^ A
//   insert F: D unvisited: evict D (not A, not E)
TEST(SieveCache, EraseUnderTheHand) {
  std::vector<std::string> evicted;
  SieveCache<std::string, int> cache(3, [&](const std::string& k, int&) { evicted.push_back(k); });
  cache.insert("A", 1);
  cache.insert("B", 2);
  cache.insert("C", 3);
  ASSERT_NE(cache.get("A"), nullptr);
  cache.insert("D", 4);
  ASSERT_EQ(evicted, (std::vector<std::string>{"B"}));
  EXPECT_TRUE(cache.erase("C"));
  cache.insert("E", 5);
  EXPECT_EQ(evicted.size(), 1u);
  cache.insert("F", 6);
  EXPECT_EQ(evicted, (std::vector<std::string>{"B", "D"}));
  EXPECT_EQ(keys_newest_first(cache), (Keys{"F", "E", "A"}));
}

TEST(SieveCache, InsertExistingReplacesThroughCallback) {
  Evicted evicted;
  SieveCache<std::string, int> cache(
      2, [&](const std::string& k, int& v) { evicted.emplace_back(k, v); });
  cache.insert("a", 1);
  cache.insert("b", 2);
  int* v = cache.insert("a", 10);  // replaced in place, and marked visited
  EXPECT_EQ(*v, 10);
  EXPECT_EQ(evicted, (Evicted{{"a", 1}}));
  EXPECT_EQ(cache.size(), 2u);
  cache.insert("c", 3);  // a is visited: b goes
  EXPECT_EQ(evicted.back(), (std::pair<std::string, int>{"b", 2}));
  EXPECT_EQ(*cache.get("a"), 10);
}

TEST(SieveCache, ClearCallsNoCallbackAndResets) {
  int callbacks = 0;
  SieveCache<int, int> cache(2, [&](const int&, int&) { ++callbacks; });
  cache.insert(1, 1);
  cache.insert(2, 2);
  ASSERT_NE(cache.get(1), nullptr);
  cache.clear();
  EXPECT_EQ(callbacks, 0);
  EXPECT_TRUE(cache.empty());
  EXPECT_EQ(cache.get(1), nullptr);
  cache.insert(3, 3);
  cache.insert(4, 4);
  cache.insert(5, 5);
  EXPECT_EQ(callbacks, 1);
  EXPECT_FALSE(cache.contains(3));
}

TEST(SieveCache, MoveOnlyValuesAndStablePointers) {
  std::vector<int> released;
  SieveCache<int, std::unique_ptr<int>> cache(
      1000, [&](const int&, std::unique_ptr<int>& v) { released.push_back(*v); });
  std::unique_ptr<int>* first = cache.insert(0, std::make_unique<int>(0));
  for (int i = 1; i < 1000; ++i) cache.insert(i, std::make_unique<int>(i));
  EXPECT_EQ(cache.get(0), first);  // survived every rehash
  EXPECT_EQ(**first, 0);
  cache.insert(1000, std::make_unique<int>(1000));  // 0 visited: evict 1
  EXPECT_EQ(released, (std::vector<int>{1}));
}

TEST(FifoCache, EvictsInInsertionOrder) {
  Evicted evicted;
  FifoCache<std::string, int> cache(
      3, [&](const std::string& k, int& v) { evicted.emplace_back(k, v); });
  cache.insert("A", 1);
  cache.insert("B", 2);
  cache.insert("C", 3);
  ASSERT_NE(cache.get("A"), nullptr);  // lookups do not reorder
  cache.insert("D", 4);
  cache.insert("E", 5);
  ASSERT_NE(cache.get("C"), nullptr);
  cache.insert("F", 6);
  cache.insert("G", 7);
  EXPECT_EQ(evicted, (Evicted{{"A", 1}, {"B", 2}, {"C", 3}, {"D", 4}}));
  EXPECT_EQ(keys_newest_first(cache), (Keys{"G", "F", "E"}));
  EXPECT_EQ(cache.get("A"), nullptr);
  EXPECT_EQ(*cache.get("E"), 5);
}

TEST(FifoCache, CapacityOne) {
  std::vector<int> evicted;
  FifoCache<int, int> cache(1, [&](const int& k, int&) { evicted.push_back(k); });
  cache.insert(1, 1);
  cache.insert(2, 2);
  cache.insert(3, 3);
  EXPECT_EQ(evicted, (std::vector<int>{1, 2}));
  EXPECT_EQ(cache.size(), 1u);
  EXPECT_EQ(*cache.get(3), 3);
  FifoCache<int, int> zero(0);
  EXPECT_EQ(zero.capacity(), 1u);
}

TEST(FifoCache, EraseThenReinsert) {
  std::vector<int> evicted;
  FifoCache<int, int> cache(3, [&](const int& k, int&) { evicted.push_back(k); });
  for (int k : {1, 2, 3}) cache.insert(k, k);
  EXPECT_TRUE(cache.erase(1));  // the tail
  EXPECT_TRUE(cache.erase(3));  // the head
  EXPECT_FALSE(cache.erase(3));
  EXPECT_TRUE(evicted.empty());
  EXPECT_EQ(cache.size(), 1u);
  cache.insert(1, 10);  // newest now: order 2, 1
  cache.insert(4, 4);
  cache.insert(5, 5);  // full at 2 1 4: evict 2
  cache.insert(6, 6);  // evict 1
  EXPECT_EQ(evicted, (std::vector<int>{2, 1}));
  std::vector<int> keys;
  cache.for_each([&](const int& k, int&) { keys.push_back(k); });
  EXPECT_EQ(keys, (std::vector<int>{6, 5, 4}));
}

TEST(FifoCache, InsertExistingKeepsPlace) {
  Evicted evicted;
  FifoCache<std::string, int> cache(
      2, [&](const std::string& k, int& v) { evicted.emplace_back(k, v); });
  cache.insert("a", 1);
  cache.insert("b", 2);
  EXPECT_EQ(*cache.insert("a", 10), 10);
  EXPECT_EQ(evicted, (Evicted{{"a", 1}}));  // the replaced value
  cache.insert("c", 3);                     // a is still the oldest
  EXPECT_EQ(evicted.back(), (std::pair<std::string, int>{"a", 10}));
  cache.clear();
  EXPECT_EQ(evicted.size(), 2u);
  EXPECT_TRUE(cache.empty());
}

TEST(SeqMap, ConsecutiveKeysErasedOutOfOrder) {
  SeqMap<int> map;
  for (uint64_t k = 100; k < 110; ++k) map.insert(k, static_cast<int>(k) * 2);
  EXPECT_EQ(map.size(), 10u);
  EXPECT_EQ(*map.find(105), 210);
  EXPECT_EQ(map.find(99), nullptr);
  EXPECT_EQ(map.find(110), nullptr);
  EXPECT_TRUE(map.erase(105));
  EXPECT_FALSE(map.erase(105));
  EXPECT_EQ(map.find(105), nullptr);
  EXPECT_EQ(*map.find(106), 212);  // past the erased slot, still at once
  EXPECT_EQ(map.min_key(), 100u);
  EXPECT_TRUE(map.erase(101));
  EXPECT_TRUE(map.erase(100));  // the front moves past 101 too
  EXPECT_EQ(map.min_key(), 102u);
  EXPECT_EQ(map.size(), 7u);
  std::vector<uint64_t> keys;
  map.for_each([&](uint64_t k, int& v) {
    EXPECT_EQ(v, static_cast<int>(k) * 2);
    keys.push_back(k);
  });
  EXPECT_EQ(keys, (std::vector<uint64_t>{102, 103, 104, 106, 107, 108, 109}));
}

TEST(SeqMap, KeysWithGapsFoundBySearch) {
  SeqMap<int> map;
  const std::vector<uint64_t> keys = {3, 4, 9, 10, 11, 40, 41, 1000};
  for (uint64_t k : keys) map.insert(k, static_cast<int>(k));
  for (uint64_t k : keys) {
    ASSERT_NE(map.find(k), nullptr) << k;
    EXPECT_EQ(*map.find(k), static_cast<int>(k));
  }
  for (uint64_t k : {0, 5, 8, 12, 39, 42, 999, 1001}) EXPECT_EQ(map.find(k), nullptr) << k;
  EXPECT_EQ(map.find(UINT64_MAX), nullptr);  // a wire's key, however large
  EXPECT_TRUE(map.erase(3));
  EXPECT_TRUE(map.erase(9));
  EXPECT_EQ(map.min_key(), 4u);
  EXPECT_TRUE(map.erase(4));
  EXPECT_EQ(map.min_key(), 10u);
}

TEST(SeqMap, EmptiesAndRefills) {
  SeqMap<int> map;
  EXPECT_TRUE(map.empty());
  EXPECT_FALSE(map.erase(0));
  EXPECT_EQ(map.find(0), nullptr);
  uint64_t next = 0;
  for (int round = 0; round < 100; ++round) {
    for (int i = 0; i < 5; ++i) map.insert(next++, round);
    for (uint64_t k = next - 5; k < next; ++k) EXPECT_TRUE(map.erase(k));
    EXPECT_TRUE(map.empty());
  }
  EXPECT_EQ(map.capacity(), 8u);  // wrapped round the ring, never grew
  map.insert(next, 7);
  map.clear();
  EXPECT_TRUE(map.empty());
  EXPECT_EQ(map.find(next), nullptr);
  map.insert(next + 1, 8);  // any key after a clear
  EXPECT_EQ(map.min_key(), next + 1);
}

TEST(SeqMap, OldestEntryHeldRingPacksInsteadOfGrowing) {
  SeqMap<int> map;
  map.insert(0, -1);  // never completes
  uint64_t next = 1;
  for (int i = 0; i < 10000; ++i) {
    for (int j = 0; j < 4; ++j) map.insert(next + j, j);
    for (int j = 3; j >= 0; --j) ASSERT_TRUE(map.erase(next + j));
    next += 4;
  }
  EXPECT_EQ(map.size(), 1u);
  EXPECT_EQ(map.min_key(), 0u);
  EXPECT_EQ(*map.find(0), -1);
  EXPECT_LE(map.capacity(), 16u);  // 5 live at most: not 40000 erased slots
  map.insert(next, 5);
  EXPECT_EQ(*map.find(next), 5);
  EXPECT_TRUE(map.erase(0));
  EXPECT_EQ(map.min_key(), next);
}

TEST(SeqMap, GrowsKeepingOrderAndReleasesErasedValues) {
  SeqMap<std::shared_ptr<int>> map;
  auto owned = std::make_shared<int>(1);
  for (uint64_t k = 0; k < 100; ++k) map.insert(k * 3, k == 50 ? owned : std::make_shared<int>(0));
  EXPECT_GE(map.capacity(), 100u);
  EXPECT_EQ(owned.use_count(), 2);
  EXPECT_TRUE(map.erase(150));
  EXPECT_EQ(owned.use_count(), 1);  // released at erase, not when the front passes
  uint64_t last = 0;
  size_t n = 0;
  map.for_each([&](uint64_t k, std::shared_ptr<int>&) {
    if (n++ > 0) {
      EXPECT_GT(k, last);
    }
    last = k;
  });
  EXPECT_EQ(n, 99u);
}

}  // namespace
}  // namespace mc::ucs
