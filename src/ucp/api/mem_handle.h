// SPDX-License-Identifier: Apache-2.0
// MemHandle: user memory registered with every memory domain that can, and
// its packed remote key for peers.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "ucs/status/status.h"
#include "uct/api/md.h"

namespace mc::ucp {

using ucs::Result;
using ucs::Status;

class Context;

/// A registration of [address, address + length) in the suitable memory
/// domains of a context. Destroying it deregisters. Thread safety: immutable
/// after map(); must not outlive its context.
class MemHandle {
 public:
  /// Registers host memory with every memory domain that registers host
  /// memory (failures of one md are logged at debug level and skipped).
  /// `access` is uct::MemAccess bits. Returns InvalidParam for a null or
  /// empty range, Unsupported when no memory domain could register it.
  static Result<std::unique_ptr<MemHandle>> map(Context& context, void* address, size_t length,
                                                unsigned access = uct::kAccessAll);
  /// Allocates `length` bytes of host memory from the first memory domain
  /// that allocates (MdAttr kMdAlloc: sm's shared memory, which a peer on
  /// this host maps and writes with plain stores instead of a copy through
  /// the kernel), and registers it with every other memory domain as map()
  /// does; ordinary page-aligned memory registered by map() when no domain
  /// allocates. Released with the handle. InvalidParam for length 0,
  /// NoMemory when nothing could allocate it.
  static Result<std::unique_ptr<MemHandle>> alloc(Context& context, size_t length,
                                                  unsigned access = uct::kAccessAll);
  ~MemHandle();
  MemHandle(const MemHandle&) = delete;
  MemHandle& operator=(const MemHandle&) = delete;

  void* address() const { return address_; }
  size_t length() const { return length_; }
  /// Whether [addr, addr + len) lies inside the registration.
  bool contains(const void* addr, size_t len) const;
  /// The UCT registration in md `md_index` of the context; null when none.
  const uct::MemHandle* uct_memh(size_t md_index) const;
  /// The packed remote key (see core/rkey_container.h for the format): one
  /// packed UCT rkey per memory domain that needs one. Returns Unsupported
  /// when the registration allows no remote access.
  Result<std::vector<uint8_t>> rkey_pack() const;

 private:
  MemHandle(Context* context, void* address, size_t length)
      : context_(context), address_(address), length_(length) {}

  /// Registers [address_, +length_) with each md that registers host memory
  /// and has no registration here yet; the number of registrations made.
  size_t register_all(unsigned access);

  Context* context_;
  void* address_;
  size_t length_;
  std::vector<std::unique_ptr<uct::MemHandle>> per_md_;  ///< indexed like Context::mds()
  int alloc_md_ = -1;       ///< the md whose mem_alloc made the memory; released last
  void* heap_ = nullptr;    ///< alloc() without an allocating md: freed last
};

}  // namespace mc::ucp
