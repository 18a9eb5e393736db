// SPDX-License-Identifier: Apache-2.0
// MemHandle: user memory registered with every memory domain that can, and
// its packed remote key for peers.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "ucs/status/status.h"
#include "ucs/sys/visibility.h"
#include "uct/api/md.h"

namespace mc::ucp {

using ucs::Result;
using ucs::Status;

class Context;

/// A registration of [address, address + length) in the suitable memory
/// domains of a context. Destroying it deregisters. Thread safety: immutable
/// after map(); must not outlive its context.
class MC_API MemHandle {
 public:
  /// Registers memory of type `mem` with every memory domain that registers
  /// that type (failures of one md are logged at debug level and skipped).
  /// Unknown (the default): the type the memory domains that detect memory
  /// types tell, else host. Memory other than host memory that allows
  /// remote access joins the context's remote_regions(): a peer whose lanes
  /// cannot reach it has it staged here (remote staging). `access` is
  /// uct::MemAccess bits. Returns InvalidParam for a null or empty range,
  /// Unsupported when no memory domain could register host memory (other
  /// memory that none registers is kept for remote staging only).
  static Result<std::unique_ptr<MemHandle>> map(Context& context, void* address, size_t length,
                                                unsigned access = uct::kAccessAll,
                                                uct::MemType mem = uct::MemType::Unknown);
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
  /// The memory type of the registration (carried in the packed rkey).
  uct::MemType mem_type() const { return mem_type_; }
  /// Whether [addr, addr + len) lies inside the registration.
  bool contains(const void* addr, size_t len) const {
    const auto a = reinterpret_cast<uintptr_t>(addr);
    const auto base = reinterpret_cast<uintptr_t>(address_);
    return a >= base && len <= length_ && a - base <= length_ - len;
  }
  /// The UCT registration in md `md_index` of the context; null when none.
  const uct::MemHandle* uct_memh(size_t md_index) const;
  /// The packed remote key (see core/rkey_container.h for the format): one
  /// packed UCT rkey per memory domain that needs one. Returns Unsupported
  /// when the registration allows no remote access.
  Result<std::vector<uint8_t>> rkey_pack() const;

 private:
  MemHandle(Context* context, void* address, size_t length)
      : context_(context), address_(address), length_(length) {}

  /// Registers [address_, +length_) with each md that registers memory of
  /// mem_type_ and has no registration here yet; the number made.
  size_t register_all(unsigned access);

  Context* context_;
  void* address_;
  size_t length_;
  std::vector<std::unique_ptr<uct::MemHandle>> per_md_;  ///< indexed like Context::mds()
  int alloc_md_ = -1;     ///< the md whose mem_alloc made the memory; released last
  void* heap_ = nullptr;  ///< alloc() without an allocating md: freed last
  uct::MemType mem_type_ = uct::MemType::Host;
  uint64_t region_ = 0;  ///< its id in the context's remote_regions(), or 0
};

}  // namespace mc::ucp
