// SPDX-License-Identifier: Apache-2.0
// SieveCache and FifoCache: exact eviction order against hand-worked
// examples, callbacks, capacity edge cases, erase and reinsertion.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ucs/datastruct/fifo_cache.h"
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

}  // namespace
}  // namespace mc::ucs
