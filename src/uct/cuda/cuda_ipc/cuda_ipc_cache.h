// SPDX-License-Identifier: Apache-2.0
// The peer side's cache of mapped exports, keyed by (owner socket, export
// id): an export is mapped once however many rkeys name it. An owner's
// notice that the export is gone (or that the owner process has gone)
// removes it: the mapping is marked stale at once, so operations on an rkey
// that still holds it fail naming why, and it is closed when the last such
// rkey is released. Unreferenced mappings are kept up to a bound, the
// oldest closed first. Pure logic over an opener: tested without CUDA.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "ucs/status/status.h"

namespace mc::uct::cuda {

/// One mapped export. Closed (by `close`) when the last holder drops it.
class IpcMapping {
 public:
  IpcMapping(uintptr_t base, size_t length, int device, std::function<void()> close)
      : base_(base), length_(length), device_(device), close_(std::move(close)) {}
  ~IpcMapping() {
    if (close_) close_();
  }
  IpcMapping(const IpcMapping&) = delete;
  IpcMapping& operator=(const IpcMapping&) = delete;

  uintptr_t base() const { return base_; }  ///< this process's address of the allocation
  size_t length() const { return length_; }
  int device() const { return device_; }  ///< the local device whose context mapped it
  /// Empty while usable; else why not ("the owner unregistered it").
  std::string stale_reason() const {
    std::lock_guard guard(lock_);
    return stale_;
  }
  void mark_stale(std::string why) {
    std::lock_guard guard(lock_);
    if (stale_.empty()) stale_ = std::move(why);
  }

 private:
  uintptr_t base_;
  size_t length_;
  int device_;
  std::function<void()> close_;
  mutable std::mutex lock_;  // guards stale_
  std::string stale_;
};

class IpcMappingCache {
 public:
  using Opener = std::function<ucs::Result<std::shared_ptr<IpcMapping>>()>;

  /// At most `max_unused` mappings no rkey holds are kept.
  explicit IpcMappingCache(size_t max_unused) : max_unused_(max_unused) {}

  /// The mapping of (socket, export id): cached, else made by `open` and
  /// cached. open's error is returned as is.
  ucs::Result<std::shared_ptr<IpcMapping>> get(const std::string& socket, uint64_t export_id,
                                              const Opener& open);
  /// The owner says export `export_id` of `socket` is gone (0: every export
  /// of it, the owner process has gone): marked stale, removed.
  void invalidate(const std::string& socket, uint64_t export_id, const std::string& why);

  size_t size() const;
  uint64_t hits() const { return hits_; }
  uint64_t opens() const { return opens_; }
  uint64_t invalidations() const { return invalidations_; }

 private:
  using Key = std::pair<std::string, uint64_t>;
  void trim(const Key& added);  // with lock_ held

  const size_t max_unused_;
  mutable std::mutex lock_;  // guards entries_ and order_
  std::map<Key, std::shared_ptr<IpcMapping>> entries_;
  std::list<Key> order_;  // least recently used first
  std::atomic<uint64_t> hits_{0}, opens_{0}, invalidations_{0};
};

}  // namespace mc::uct::cuda
