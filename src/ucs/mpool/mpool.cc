// SPDX-License-Identifier: Apache-2.0
// Mpool: chunk growth, the intrusive free list, and the locked variant.
#include "ucs/mpool/mpool.h"

#include <algorithm>
#include <cassert>
#include <cstdlib>

#include "ucs/log/log.h"
#include "ucs/sys/sys.h"

namespace mc::ucs {

namespace {

constexpr bool is_pow2(size_t v) {
  return v != 0 && (v & (v - 1)) == 0;
}

constexpr size_t round_up(size_t v, size_t align) {
  return (v + align - 1) & ~(align - 1);
}

}  // namespace

Result<std::unique_ptr<Mpool>> Mpool::create(const MpoolParams& params, ChunkOps ops) {
  if (params.elem_size == 0 || params.elems_per_chunk == 0 || params.max_elems == 0) {
    MC_LOG(error) << "mpool '" << params.name << "': elem_size (" << params.elem_size
                  << "), elems_per_chunk (" << params.elems_per_chunk << ") and max_elems ("
                  << params.max_elems << ") must all be non-zero";
    return Status::InvalidParam;
  }
  if (!is_pow2(params.alignment)) {
    MC_LOG(error) << "mpool '" << params.name << "': alignment " << params.alignment
                  << " is not a power of two";
    return Status::InvalidParam;
  }
  if (static_cast<bool>(ops.alloc) != static_cast<bool>(ops.release)) {
    MC_LOG(error) << "mpool '" << params.name
                  << "': chunk ops need both alloc and release, or neither";
    return Status::InvalidParam;
  }
  MpoolParams p = params;
  // A free element stores the list link in place, so it must fit and be
  // aligned for a pointer.
  p.alignment = std::max(p.alignment, alignof(FreeElem));
  const size_t size = std::max(p.elem_size, sizeof(FreeElem));
  if (size > SIZE_MAX - p.alignment) {
    MC_LOG(error) << "mpool '" << p.name << "': elem_size " << p.elem_size << " is too large";
    return Status::InvalidParam;
  }
  const size_t stride = round_up(size, p.alignment);
  if (p.elems_per_chunk > SIZE_MAX / stride) {
    MC_LOG(error) << "mpool '" << p.name << "': a chunk of " << p.elems_per_chunk << " elements of "
                  << stride << " bytes overflows size_t";
    return Status::InvalidParam;
  }
  return std::unique_ptr<Mpool>(new Mpool(p, std::move(ops), stride));
}

Mpool::Mpool(const MpoolParams& params, ChunkOps ops, size_t stride)
    : params_(params), ops_(std::move(ops)), stride_(stride) {}

Mpool::~Mpool() {
#ifdef MC_DEBUG
  if (in_use_ != 0) {
    MC_LOG(error) << "mpool '" << params_.name << "': " << in_use_ << " of " << total_
                  << " elements were not returned before destruction";
  }
#endif
  for (const Chunk& c : chunks_) {
    if (ops_.release) {
      ops_.release(c.mem, c.bytes);
    } else {
      std::free(c.mem);
    }
  }
}

Status Mpool::grow() {
  if (total_ >= params_.max_elems) return Status::NoResource;
  const size_t elems = std::min(params_.elems_per_chunk, params_.max_elems - total_);
  const size_t bytes = elems * stride_;  // no overflow: elems <= elems_per_chunk

  void* mem = nullptr;
  if (ops_.alloc) {
    Result<void*> r = ops_.alloc(bytes);
    if (!r.ok()) {
      MC_LOG(error) << "mpool '" << params_.name << "': chunk hook failed to allocate " << bytes
                    << " bytes: " << status_string(r.status());
      return r.status();
    }
    mem = *r;
    if (mem == nullptr) {
      MC_LOG(error) << "mpool '" << params_.name << "': chunk hook returned a null pointer";
      return Status::NoMemory;
    }
    if (reinterpret_cast<uintptr_t>(mem) % params_.alignment != 0) {
      MC_LOG(error) << "mpool '" << params_.name << "': chunk hook returned " << mem
                    << ", not aligned to " << params_.alignment << " bytes";
      ops_.release(mem, bytes);
      return Status::InvalidParam;
    }
  } else if (int err = posix_memalign(&mem, params_.alignment, bytes); err != 0) {
    MC_LOG(error) << "mpool '" << params_.name << "': cannot allocate a chunk of " << bytes
                  << " bytes: " << errno_string(err);
    return Status::NoMemory;
  }
  chunks_.push_back(Chunk{mem, bytes, elems});

  // Thread the new elements onto the free list in address order, so that
  // consecutive get()s walk the chunk forwards.
  auto* base = static_cast<char*>(mem);
  for (size_t i = elems; i-- > 0;) {
    auto* e = reinterpret_cast<FreeElem*>(base + i * stride_);
    e->next = free_;
    free_ = e;
  }
  total_ += elems;
  MC_LOG(debug) << "mpool '" << params_.name << "': grew by " << elems << " elements to " << total_;
  return Status::Ok;
}

void* Mpool::get() {
  if (free_ == nullptr && is_error(grow())) return nullptr;
  FreeElem* e = free_;
  free_ = e->next;
  ++in_use_;
  return e;
}

void Mpool::put(void* elem) {
  assert(elem != nullptr);
#ifdef MC_DEBUG
  assert(owns(elem) && "put() of an element that is not from this pool");
  assert(in_use_ > 0 && "put() of more elements than get() handed out");
#endif
  auto* e = static_cast<FreeElem*>(elem);
  e->next = free_;
  free_ = e;
  --in_use_;
}

bool Mpool::owns(const void* ptr) const {
  const auto p = reinterpret_cast<uintptr_t>(ptr);
  for (const Chunk& c : chunks_) {
    const auto base = reinterpret_cast<uintptr_t>(c.mem);
    if (p >= base && p < base + c.elems * stride_) return (p - base) % stride_ == 0;
  }
  return false;
}

Result<std::unique_ptr<ThreadSafeMpool>> ThreadSafeMpool::create(const MpoolParams& params,
                                                                 ChunkOps ops) {
  MC_ASSIGN_OR_RETURN(std::unique_ptr<Mpool> pool, Mpool::create(params, std::move(ops)));
  return std::unique_ptr<ThreadSafeMpool>(new ThreadSafeMpool(std::move(pool)));
}

void* ThreadSafeMpool::get() {
  std::lock_guard guard(lock_);
  return pool_->get();
}

void ThreadSafeMpool::put(void* elem) {
  std::lock_guard guard(lock_);
  pool_->put(elem);
}

Status ThreadSafeMpool::grow() {
  std::lock_guard guard(lock_);
  return pool_->grow();
}

size_t ThreadSafeMpool::in_use() const {
  std::lock_guard guard(lock_);
  return pool_->in_use();
}

size_t ThreadSafeMpool::total() const {
  std::lock_guard guard(lock_);
  return pool_->total();
}

size_t ThreadSafeMpool::chunk_count() const {
  std::lock_guard guard(lock_);
  return pool_->chunk_count();
}

}  // namespace mc::ucs
