// SPDX-License-Identifier: Apache-2.0
// Mpool and ThreadSafeMpool: parameters, growth, limit, alignment, reuse,
// the chunk hook and its failures, two threads, and the debug leak report.
#include <glog/logging.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/log_capture.h"
#include "ucs/mpool/mpool.h"

namespace mc::ucs {
namespace {

MpoolParams params(size_t elem_size, size_t per_chunk, size_t max_elems = SIZE_MAX) {
  MpoolParams p;
  p.elem_size = elem_size;
  p.elems_per_chunk = per_chunk;
  p.max_elems = max_elems;
  p.name = "test";
  return p;
}

// A chunk hook over posix_memalign that records every call.
struct RecordingOps {
  std::vector<std::pair<void*, size_t>> allocs;
  std::vector<std::pair<void*, size_t>> releases;
  size_t fail_after = SIZE_MAX;  ///< allocations that succeed before failing
  size_t alignment = 64;

  ChunkOps ops() {
    ChunkOps o;
    o.alloc = [this](size_t bytes) -> Result<void*> {
      if (allocs.size() >= fail_after) return Status::NoMemory;
      void* p = nullptr;
      if (posix_memalign(&p, alignment, bytes) != 0) return Status::NoMemory;
      allocs.emplace_back(p, bytes);
      return p;
    };
    o.release = [this](void* p, size_t bytes) {
      releases.emplace_back(p, bytes);
      std::free(p);
    };
    return o;
  }
};

TEST(Mpool, RejectsBadParams) {
  EXPECT_EQ(Mpool::create(params(0, 4)).status(), Status::InvalidParam);
  EXPECT_EQ(Mpool::create(params(8, 0)).status(), Status::InvalidParam);
  EXPECT_EQ(Mpool::create(params(8, 4, 0)).status(), Status::InvalidParam);
  for (size_t align : {size_t{0}, size_t{3}, size_t{24}}) {
    MpoolParams p = params(8, 4);
    p.alignment = align;
    EXPECT_EQ(Mpool::create(p).status(), Status::InvalidParam) << "alignment " << align;
  }
  EXPECT_EQ(Mpool::create(params(SIZE_MAX / 2, 4)).status(), Status::InvalidParam);
  ChunkOps half;
  half.alloc = [](size_t) -> Result<void*> { return Status::NoMemory; };
  EXPECT_EQ(Mpool::create(params(8, 4), half).status(), Status::InvalidParam);
  EXPECT_EQ(ThreadSafeMpool::create(params(0, 4)).status(), Status::InvalidParam);
}

TEST(Mpool, StartsEmptyAndGrowsByChunk) {
  auto pool = Mpool::create(params(32, 4));
  ASSERT_TRUE(pool.ok());
  Mpool& mp = **pool;
  EXPECT_EQ(mp.chunk_count(), 0u);
  EXPECT_EQ(mp.total(), 0u);

  std::vector<void*> elems;
  for (int i = 0; i < 4; ++i) elems.push_back(mp.get());
  EXPECT_EQ(mp.chunk_count(), 1u);
  EXPECT_EQ(mp.total(), 4u);
  EXPECT_EQ(mp.in_use(), 4u);

  elems.push_back(mp.get());
  EXPECT_EQ(mp.chunk_count(), 2u);
  EXPECT_EQ(mp.total(), 8u);
  EXPECT_EQ(mp.in_use(), 5u);

  for (void* e : elems) ASSERT_NE(e, nullptr);
  EXPECT_EQ(std::set<void*>(elems.begin(), elems.end()).size(), elems.size());
  for (void* e : elems) mp.put(e);
  EXPECT_EQ(mp.in_use(), 0u);
  EXPECT_EQ(mp.total(), 8u);
}

TEST(Mpool, ElementsDoNotOverlap) {
  auto pool = Mpool::create(params(40, 8));
  ASSERT_TRUE(pool.ok());
  std::vector<unsigned char*> elems;
  for (int i = 0; i < 20; ++i) {
    auto* e = static_cast<unsigned char*>((*pool)->get());
    ASSERT_NE(e, nullptr);
    std::memset(e, i + 1, 40);
    elems.push_back(e);
  }
  for (int i = 0; i < 20; ++i) {
    for (size_t b = 0; b < 40; ++b) ASSERT_EQ(elems[i][b], i + 1) << "element " << i;
  }
  for (auto* e : elems) (*pool)->put(e);
}

TEST(Mpool, LimitReturnsNull) {
  auto pool = Mpool::create(params(16, 4, 6));
  ASSERT_TRUE(pool.ok());
  Mpool& mp = **pool;
  std::vector<void*> elems;
  for (int i = 0; i < 6; ++i) {
    elems.push_back(mp.get());
    ASSERT_NE(elems.back(), nullptr) << "element " << i;
  }
  EXPECT_EQ(mp.get(), nullptr);
  EXPECT_EQ(mp.get(), nullptr);
  EXPECT_EQ(mp.total(), 6u);  // the second chunk was trimmed to 2
  EXPECT_EQ(mp.chunk_count(), 2u);
  EXPECT_EQ(mp.in_use(), 6u);
  EXPECT_EQ(mp.grow(), Status::NoResource);

  mp.put(elems.back());
  elems.pop_back();
  void* again = mp.get();
  EXPECT_NE(again, nullptr);
  elems.push_back(again);
  EXPECT_EQ(mp.get(), nullptr);
  for (void* e : elems) mp.put(e);
}

TEST(Mpool, AlignsElements) {
  MpoolParams p = params(24, 5);
  p.alignment = 64;
  auto pool = Mpool::create(p);
  ASSERT_TRUE(pool.ok());
  EXPECT_EQ((*pool)->stride(), 64u);
  std::vector<void*> elems;
  for (int i = 0; i < 12; ++i) {
    elems.push_back((*pool)->get());
    ASSERT_NE(elems.back(), nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(elems.back()) % 64, 0u) << "element " << i;
  }
  for (void* e : elems) (*pool)->put(e);
}

TEST(Mpool, SmallElementsHoldALink) {
  MpoolParams p = params(1, 4);
  p.alignment = 1;
  auto pool = Mpool::create(p);
  ASSERT_TRUE(pool.ok());
  EXPECT_EQ((*pool)->params().alignment, alignof(void*));
  EXPECT_EQ((*pool)->stride(), sizeof(void*));
  void* a = (*pool)->get();
  void* b = (*pool)->get();
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % alignof(void*), 0u);
  (*pool)->put(a);
  (*pool)->put(b);
}

TEST(Mpool, ReusesReturnedElements) {
  auto pool = Mpool::create(params(64, 4));
  ASSERT_TRUE(pool.ok());
  Mpool& mp = **pool;
  void* a = mp.get();
  void* b = mp.get();
  mp.put(a);
  EXPECT_EQ(mp.get(), a);  // LIFO: the hottest element comes back first
  mp.put(b);
  mp.put(a);
  EXPECT_EQ(mp.get(), a);
  EXPECT_EQ(mp.get(), b);

  // Many cycles never grow past the first chunk.
  for (int i = 0; i < 1000; ++i) mp.put(mp.get());
  EXPECT_EQ(mp.chunk_count(), 1u);
  mp.put(a);
  mp.put(b);
  EXPECT_EQ(mp.in_use(), 0u);
}

TEST(Mpool, OwnsItsElementsOnly) {
  auto pool = Mpool::create(params(32, 4));
  ASSERT_TRUE(pool.ok());
  auto* e = static_cast<char*>((*pool)->get());
  EXPECT_TRUE((*pool)->owns(e));
  EXPECT_FALSE((*pool)->owns(e + 1));
  int outside = 0;
  EXPECT_FALSE((*pool)->owns(&outside));
  (*pool)->put(e);
}

TEST(Mpool, HookCalledPerChunkAndReleasedAtDestruction) {
  RecordingOps rec;
  {
    MpoolParams p = params(100, 3);
    p.alignment = 64;
    auto pool = Mpool::create(p, rec.ops());
    ASSERT_TRUE(pool.ok());
    EXPECT_TRUE(rec.allocs.empty());
    std::vector<void*> elems;
    for (int i = 0; i < 7; ++i) elems.push_back((*pool)->get());
    EXPECT_EQ(rec.allocs.size(), 3u);
    EXPECT_EQ((*pool)->chunk_count(), 3u);
    for (const auto& [ptr, bytes] : rec.allocs) EXPECT_EQ(bytes, 3 * 128u);
    for (void* e : elems) {
      bool inside = false;
      for (const auto& [ptr, bytes] : rec.allocs) {
        auto* base = static_cast<char*>(ptr);
        inside |= e >= base && static_cast<char*>(e) < base + bytes;
      }
      EXPECT_TRUE(inside) << e << " is not in a hook chunk";
    }
    for (void* e : elems) (*pool)->put(e);
    EXPECT_TRUE(rec.releases.empty());
  }
  ASSERT_EQ(rec.releases.size(), 3u);
  EXPECT_EQ(std::set(rec.releases.begin(), rec.releases.end()),
            std::set(rec.allocs.begin(), rec.allocs.end()));
}

TEST(Mpool, HookFailureReturnsNull) {
  RecordingOps rec;
  rec.fail_after = 1;
  {
    auto pool = Mpool::create(params(16, 2), rec.ops());
    ASSERT_TRUE(pool.ok());
    void* a = (*pool)->get();
    void* b = (*pool)->get();
    ASSERT_NE(a, nullptr);
    ASSERT_NE(b, nullptr);
    EXPECT_EQ((*pool)->get(), nullptr);
    EXPECT_EQ((*pool)->grow(), Status::NoMemory);
    EXPECT_EQ((*pool)->chunk_count(), 1u);
    EXPECT_EQ((*pool)->in_use(), 2u);
    (*pool)->put(a);
    EXPECT_EQ((*pool)->get(), a);  // a failed growth leaves the pool usable
    (*pool)->put(a);
    (*pool)->put(b);
  }
  EXPECT_EQ(rec.releases.size(), 1u);
}

TEST(Mpool, HookMisalignedChunkIsReleased) {
  std::vector<void*> released;
  alignas(64) static unsigned char arena[1024];
  ChunkOps ops;
  ops.alloc = [](size_t) -> Result<void*> { return static_cast<void*>(arena + 8); };
  ops.release = [&released](void* p, size_t) { released.push_back(p); };
  MpoolParams p = params(16, 4);
  p.alignment = 64;
  auto pool = Mpool::create(p, ops);
  ASSERT_TRUE(pool.ok());
  EXPECT_EQ((*pool)->get(), nullptr);
  EXPECT_EQ((*pool)->grow(), Status::InvalidParam);
  EXPECT_EQ(released.size(), 2u);
  EXPECT_EQ((*pool)->chunk_count(), 0u);
}

TEST(Mpool, GrowAheadOfNeed) {
  RecordingOps rec;
  auto pool = Mpool::create(params(16, 8), rec.ops());
  ASSERT_TRUE(pool.ok());
  EXPECT_EQ((*pool)->grow(), Status::Ok);
  EXPECT_EQ(rec.allocs.size(), 1u);
  EXPECT_EQ((*pool)->total(), 8u);
  EXPECT_EQ((*pool)->in_use(), 0u);
  void* e = (*pool)->get();
  EXPECT_EQ(rec.allocs.size(), 1u);
  (*pool)->put(e);
}

TEST(Mpool, ThreadSafeUnderTwoThreads) {
  constexpr size_t kMax = 48;
  auto pool = ThreadSafeMpool::create(params(sizeof(uint64_t) * 2, 8, kMax));
  ASSERT_TRUE(pool.ok());
  ThreadSafeMpool& mp = **pool;
  std::atomic<int> errors{0};
  std::atomic<size_t> nulls{0};

  // Each thread holds up to 32 elements at a time (2 x 32 > kMax, so they
  // compete at the limit), stamps each with its id and a sequence number,
  // and checks the stamp before returning it: an element handed to both
  // threads at once would show the other's stamp.
  auto worker = [&](uint64_t tid) {
    std::vector<uint64_t*> held;
    for (uint64_t i = 0; i < 20000; ++i) {
      if (held.size() < 32) {
        auto* e = static_cast<uint64_t*>(mp.get());
        if (e == nullptr) {
          nulls.fetch_add(1, std::memory_order_relaxed);
        } else {
          e[0] = tid;
          e[1] = i;
          held.push_back(e);
        }
      }
      if (held.size() == 32 || (i % 3 == 0 && !held.empty())) {
        uint64_t* e = held.back();
        held.pop_back();
        if (e[0] != tid) errors.fetch_add(1, std::memory_order_relaxed);
        mp.put(e);
      }
    }
    for (uint64_t* e : held) {
      if (e[0] != tid) errors.fetch_add(1, std::memory_order_relaxed);
      mp.put(e);
    }
  };
  std::thread t1(worker, 1);
  std::thread t2(worker, 2);
  t1.join();
  t2.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(mp.in_use(), 0u);
  EXPECT_LE(mp.total(), kMax);
  EXPECT_EQ(mp.total(), mp.chunk_count() * 8);
}

#ifdef MC_DEBUG
TEST(Mpool, DebugBuildReportsLeaks) {
  mc::test::LogCapture sink(google::GLOG_ERROR);
  {
    MpoolParams p = params(16, 4);
    p.name = "leaky";
    auto pool = Mpool::create(p);
    ASSERT_TRUE(pool.ok());
    (void)(*pool)->get();
    (void)(*pool)->get();
    (*pool)->put((*pool)->get());
  }
  {
    auto pool = Mpool::create(params(16, 4));
    ASSERT_TRUE(pool.ok());
    (*pool)->put((*pool)->get());  // all returned: no report
  }
  const auto lines = sink.lines();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("'leaky'"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("2 of 4 elements were not returned"), std::string::npos) << lines[0];
}
#endif

}  // namespace
}  // namespace mc::ucs
