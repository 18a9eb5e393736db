// SPDX-License-Identifier: Apache-2.0
// RequestAllocator: the memory of requests (one block: the request and its
// shared count) from a per-thread free list, so that a request costs no
// malloc on the data path once a thread has made a few.
#pragma once

#include <cstddef>
#include <memory>
#include <new>

namespace mc::ucp {

namespace detail {

/// Free blocks of one size, kept per thread. A block freed on another
/// thread than the one that made it joins that thread's list (multi mode):
/// every block comes from the global operator new, so any list may keep it.
/// The list itself is trivially destructible: a block freed after its
/// thread's drainer ran (thread exit, static destruction) goes to the heap.
template <size_t Size, size_t Align>
class BlockCache {
 public:
  static constexpr size_t kMaxFree = 256;  ///< beyond it, blocks go back to the heap

  static void* get() {
    List& l = list_;
    if (!l.head || l.dead) return ::operator new (Size, std::align_val_t{Align});
    Node* n = l.head;
    l.head = n->next;
    --l.count;
    return n;
  }

  static void put(void* p) {
    List& l = list_;
    if (l.dead || l.count >= kMaxFree) {
      ::operator delete (p, std::align_val_t{Align});
      return;
    }
    if (!l.head) (void)&drainer_;  // first use by this thread: drained at its exit
    l.head = new (p) Node{l.head};
    ++l.count;
  }

 private:
  struct Node {
    Node* next;
  };
  struct List {
    Node* head = nullptr;
    size_t count = 0;
    bool dead = false;
  };
  struct Drainer {
    Drainer() {}
    ~Drainer() {
      List& l = list_;
      l.dead = true;
      while (l.head) {
        Node* n = l.head;
        l.head = n->next;
        ::operator delete (n, std::align_val_t{Align});
      }
      l.count = 0;
    }
  };
  static_assert(Size >= sizeof(Node));
  static thread_local constinit inline List list_{};
  static thread_local inline Drainer drainer_;
};

}  // namespace detail

/// A standard allocator for std::allocate_shared: single objects from the
/// thread's BlockCache, arrays from the heap.
template <class T>
struct RequestAllocator {
  using value_type = T;
  RequestAllocator() = default;
  template <class U>
  RequestAllocator(const RequestAllocator<U>&) {}

  static constexpr size_t kAlign = alignof(T) < alignof(void*) ? alignof(void*) : alignof(T);
  static constexpr size_t kSize = sizeof(T) < sizeof(void*) ? sizeof(void*) : sizeof(T);
  using Cache = detail::BlockCache<kSize, kAlign>;

  T* allocate(size_t n) {
    if (n == 1) return static_cast<T*>(Cache::get());
    return std::allocator<T>().allocate(n);
  }
  void deallocate(T* p, size_t n) {
    if (n == 1) {
      Cache::put(p);
    } else {
      std::allocator<T>().deallocate(p, n);
    }
  }
  template <class U>
  bool operator==(const RequestAllocator<U>&) const {
    return true;
  }
};

}  // namespace mc::ucp
