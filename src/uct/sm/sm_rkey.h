// SPDX-License-Identifier: Apache-2.0
// sm remote keys: what a peer needs to reach registered memory, either by
// mapping the shm segment that holds it (sm-allocated memory) or by
// cross-memory attach into the owner process (any other registered memory).
// Trust: a same-host peer is trusted as far as the kernel permits. The
// initiator checks every access against the key; CMA is then checked by
// the kernel (ptrace permission), and only the ring fallback by the target.
#pragma once

#include <cstdint>
#include <memory>

#include "uct/api/md.h"
#include "uct/sm/sm_shm.h"

namespace mc::uct::sm {

enum class RkeyKind : uint8_t {
  Shm = 1,  ///< in an sm segment: put/get are memcpy through a mapping
  Cma = 2,  ///< elsewhere: process_vm_readv/writev, or the ring fallback
};

/// The fields of a packed sm rkey (the payload inside the common envelope):
///   u8 kind | u32 pid | u64 owner start time | u64 boot hash | u64 pid ns |
///   u64 registration id | u64 base | u64 length | u32 access |
///   (Shm only) u32 segment counter | u64 segment random      (LE, 57 or 69 B)
struct RkeyInfo {
  RkeyKind kind = RkeyKind::Cma;
  uint32_t pid = 0;
  uint64_t start = 0;
  uint64_t boot_hash = 0;
  uint64_t pid_ns = 0;
  uint64_t reg_id = 0;
  uint64_t base = 0;
  uint64_t length = 0;
  uint32_t access = 0;
  uint32_t seg_counter = 0;
  uint64_t seg_random = 0;

  static constexpr size_t kMaxPayload = 69;
  void pack(std::vector<uint8_t>* out) const;
  /// False when `payload` is not exactly one well-formed key.
  bool unpack(std::span<const uint8_t> payload);
};

/// An unpacked sm rkey. Shm keys hold their segment's mapping, shared with
/// every other key of that segment (cached by the md); the mapping goes
/// when the last key does. Final: the endpoint recognises its keys by their
/// exact type (SmEp::sm_rkey), not by a dynamic_cast.
class SmRkey final : public Rkey {
 public:
  SmRkey(const RkeyInfo& info, std::shared_ptr<ShmSegment> segment)
      : info_(info), segment_(std::move(segment)), data_(segment_ ? segment_->data() : nullptr) {}

  const RkeyInfo& info() const { return info_; }
  RkeyKind kind() const { return info_.kind; }
  uint32_t pid() const { return info_.pid; }

  /// InvalidParam (logged) unless [addr, addr + len) lies inside the key's
  /// range and the key allows `access` (kAccessRemoteRead / Write). This is
  /// the initiator-side check; CMA is further checked by the kernel, and
  /// the ring fallback by the target.
  Status check(uint64_t addr, size_t len, unsigned access) const {
    const bool ok = (info_.access & access) == access && addr >= info_.base &&
                    len <= info_.length && addr - info_.base <= info_.length - len;
    return ok ? Status::Ok : refuse(addr, len, access);
  }

  /// The local address of remote `addr` in the segment mapping (Shm keys,
  /// after check()).
  uint8_t* mapped(uint64_t addr) const { return data_ + (addr - info_.base); }

 private:
  /// Logs why check() refused; InvalidParam.
  Status refuse(uint64_t addr, size_t len, unsigned access) const;

  RkeyInfo info_;
  std::shared_ptr<ShmSegment> segment_;
  uint8_t* data_;  ///< segment_->data(), kept: it asks for the page size
};

}  // namespace mc::uct::sm
