// SPDX-License-Identifier: Apache-2.0
// Fixed-size element pools that grow by chunks up to a limit; a chunk hook
// lets a memory domain allocate and register each chunk (bounce buffers).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ucs/status/status.h"

namespace mc::ucs {

/// Shape and limits of a pool.
struct MpoolParams {
  /// Bytes of one element; must be > 0. Elements smaller than a pointer are
  /// padded to one, since a free element holds the free-list link.
  size_t elem_size = 0;
  /// Alignment of every element; a power of two. Values below
  /// alignof(void*) are raised to it.
  size_t alignment = alignof(std::max_align_t);
  /// Elements added by each growth; must be > 0. The last chunk is trimmed
  /// so that the pool never holds more than `max_elems`.
  size_t elems_per_chunk = 64;
  /// Most elements the pool ever holds (SIZE_MAX: unlimited); must be > 0.
  size_t max_elems = SIZE_MAX;
  /// Names the pool in log messages.
  std::string name = "mpool";
};

/// How a pool obtains and gives back chunk memory. Both members empty: the
/// pool uses aligned malloc. Set both or neither.
struct ChunkOps {
  /// Returns `bytes` of memory aligned to the pool's alignment (after
  /// normalisation, see MpoolParams::alignment), or an error status; the
  /// pool then fails the get() that needed it. A hook typically
  /// allocates and registers with a memory domain. Called with the pool's
  /// lock held in ThreadSafeMpool: it must not call back into the pool.
  std::function<Result<void*>(size_t bytes)> alloc;
  /// Gives back what `alloc` returned, with the same size. Called once per
  /// chunk when the pool is destroyed.
  std::function<void(void* ptr, size_t bytes)> release;
};

/// A pool of fixed-size elements with an intrusive LIFO free list: get()
/// and put() are O(1), growth allocates one chunk. Elements are never given
/// back to the system before the pool is destroyed.
///
/// Not thread-safe: use ThreadSafeMpool to share one pool between threads.
/// In debug builds (MC_DEBUG), destroying a pool with elements still out
/// logs an error naming the pool and the count.
class Mpool {
 public:
  /// Creates an empty pool; no chunk is allocated until the first get().
  /// Returns InvalidParam when elem_size, elems_per_chunk or max_elems is 0,
  /// when alignment is not a power of two, when only one of `ops`' members
  /// is set, or when a chunk's size overflows size_t.
  static Result<std::unique_ptr<Mpool>> create(const MpoolParams& params, ChunkOps ops = {});

  /// Releases every chunk through the hook (or free()). Elements still out
  /// become dangling; debug builds log how many.
  ~Mpool();

  Mpool(const Mpool&) = delete;
  Mpool& operator=(const Mpool&) = delete;

  /// An element of at least elem_size bytes, aligned as asked, with
  /// unspecified content; grows by one chunk when the free list is empty.
  /// Returns nullptr when the limit is reached or the chunk allocation or
  /// hook fails (the latter is logged). Never throws.
  void* get();

  /// Returns an element obtained from get() on this pool. Debug builds
  /// assert that the pointer belongs to the pool. `elem` must not be null.
  void put(void* elem);

  /// Adds one chunk ahead of need (e.g. to register bounce buffers at
  /// start-up). Returns NoResource when the pool already holds max_elems,
  /// the hook's error, NoMemory when aligned malloc fails or the hook returns
  /// null, InvalidParam when the hook returns memory that is not aligned
  /// (that chunk is released at once). Failures are logged.
  Status grow();

  /// Elements handed out by get() and not yet put back.
  size_t in_use() const { return in_use_; }
  /// Elements in all chunks, free or in use.
  size_t total() const { return total_; }
  /// Chunks allocated so far.
  size_t chunk_count() const { return chunks_.size(); }
  /// Distance in bytes between consecutive elements of a chunk (elem_size
  /// rounded up to the alignment).
  size_t stride() const { return stride_; }
  /// The parameters given to create(), after normalisation.
  const MpoolParams& params() const { return params_; }

  /// True when `ptr` is the start of an element of this pool. O(chunks).
  bool owns(const void* ptr) const;

 private:
  struct Chunk {
    void* mem;     ///< what the allocator returned
    size_t bytes;  ///< what was asked of it
    size_t elems;  ///< elements carved from it
  };
  struct FreeElem {
    FreeElem* next;
  };

  Mpool(const MpoolParams& params, ChunkOps ops, size_t stride);

  MpoolParams params_;
  ChunkOps ops_;
  size_t stride_;
  FreeElem* free_ = nullptr;
  size_t in_use_ = 0;
  size_t total_ = 0;
  std::vector<Chunk> chunks_;
};

/// An Mpool behind a std::mutex, for pools shared between threads (e.g. a
/// worker and its async thread). Every method takes the lock; the chunk hook
/// runs with it held, so growth serialises all users of the pool.
class ThreadSafeMpool {
 public:
  /// Same parameters and statuses as Mpool::create().
  static Result<std::unique_ptr<ThreadSafeMpool>> create(const MpoolParams& params,
                                                         ChunkOps ops = {});

  /// As Mpool::get(). Thread-safe.
  void* get();
  /// As Mpool::put(). Thread-safe.
  void put(void* elem);
  /// As Mpool::grow(). Thread-safe.
  Status grow();

  /// As Mpool::in_use(); a snapshot. Thread-safe.
  size_t in_use() const;
  /// As Mpool::total(); a snapshot. Thread-safe.
  size_t total() const;
  /// As Mpool::chunk_count(); a snapshot. Thread-safe.
  size_t chunk_count() const;
  /// As Mpool::stride(). Thread-safe (immutable).
  size_t stride() const { return pool_->stride(); }

 private:
  explicit ThreadSafeMpool(std::unique_ptr<Mpool> pool) : pool_(std::move(pool)) {}

  mutable std::mutex lock_;  ///< guards every access to *pool_
  std::unique_ptr<Mpool> pool_;
};

}  // namespace mc::ucs
