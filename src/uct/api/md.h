// SPDX-License-Identifier: Apache-2.0
// Memory domain: registers and allocates memory, packs and unpacks remote
// keys, knows which memory types it can touch, and opens ifaces.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ucs/config/parser.h"
#include "ucs/config/sources.h"
#include "uct/api/types.h"

namespace mc::ucs {
class EventLoop;
}

namespace mc::uct {

class Iface;

/// A registration (or an allocation) in one memory domain. Destroying it
/// deregisters (or frees) the memory. Transports derive from it to keep
/// their private state (keys, mappings).
class MemHandle {
 public:
  MemHandle(void* address, size_t length, unsigned access, MemType mem_type)
      : address_(address), length_(length), access_(access), mem_type_(mem_type) {}
  virtual ~MemHandle() = default;
  MemHandle(const MemHandle&) = delete;
  MemHandle& operator=(const MemHandle&) = delete;

  void* address() const { return address_; }
  size_t length() const { return length_; }
  unsigned access() const { return access_; }  ///< MemAccess bits
  MemType mem_type() const { return mem_type_; }

  /// Whether [addr, addr + len) lies inside this handle.
  bool contains(const void* addr, size_t len) const {
    const auto a = reinterpret_cast<uintptr_t>(addr);
    const auto base = reinterpret_cast<uintptr_t>(address_);
    return a >= base && len <= length_ && a - base <= length_ - len;
  }

 private:
  void* address_;
  size_t length_;
  unsigned access_;
  MemType mem_type_;
};

/// One buffer of a batch registration (MemoryDomain::mem_reg_batch).
struct MemRegRequest {
  void* address = nullptr;
  size_t length = 0;
  unsigned access = 0;  ///< MemAccess bits
};

/// An unpacked remote key: what an initiator needs to reach a peer's
/// registered memory. Transport-private; only the md that unpacked it (and
/// its ifaces) interpret it.
class Rkey {
 public:
  virtual ~Rkey() = default;
};

/// What an iface needs when it opens.
struct IfaceParams {
  std::string tl_name;              ///< from TlResource
  std::string dev_name;             ///< from TlResource
  ucs::EventLoop* async = nullptr;  ///< background service; null: the iface makes its own
  ErrorHandler err_handler;         ///< peer failures; may be empty
  const ucs::config::Sources* sources = nullptr;  ///< null: the process's environment and files
  /// Deadline of connection establishment for transports that connect (an
  /// endpoint not connected by then fails with Timeout through the error
  /// handler); nullopt: the transport's own knob (e.g. MC_TCP_CONN_TIMEOUT).
  std::optional<ucs::config::Duration> connect_timeout;
};

/// A memory domain: one per component device group. Thread safety: mem_reg,
/// mem_alloc, mkey_pack and rkey_unpack may be called from any thread.
class MemoryDomain {
 public:
  virtual ~MemoryDomain() = default;

  /// The md name, e.g. "tcp", "sm", "self".
  virtual const std::string& name() const = 0;

  virtual MdAttr query() const = 0;

  /// The transport/device pairs this md can open ifaces on. Empty when the
  /// hardware is absent (and that is said once in the log).
  virtual std::vector<TlResource> query_tl_resources() const = 0;

  /// Opens an iface on one of query_tl_resources(). NoDevice for an unknown
  /// device; InvalidParam when the transport's configuration is invalid.
  virtual Result<std::unique_ptr<Iface>> iface_open(const IfaceParams& params) = 0;

  /// Registers [address, address + length) with `access` (MemAccess bits).
  /// InvalidParam for a null or zero-length range; Unsupported for memory of
  /// a type the md cannot register.
  virtual Result<std::unique_ptr<MemHandle>> mem_reg(void* address, size_t length,
                                                     unsigned access) = 0;

  /// Registers every buffer of `reqs` as mem_reg() would and returns one
  /// result per request, in order: its handle, or the status of its failure
  /// (logged where it was detected). A failed buffer leaves nothing of it
  /// registered and does not affect the others; the caller owns every handle
  /// returned. The default registers one after the other; an md may register
  /// them concurrently (ib: up to MC_IB_REG_THREADS at once). Thread safety:
  /// as mem_reg.
  virtual std::vector<Result<std::unique_ptr<MemHandle>>> mem_reg_batch(
      std::span<const MemRegRequest> reqs);

  /// Registers a file or block device at `path` (its whole length) with
  /// `access` (MemAccess bits; remote write needs the file writable). The
  /// handle's address is null, its length the file's size, its type
  /// MemType::File; operations address it by byte offset through the rkey
  /// that mkey_pack() makes of it. Unsupported unless MdAttr::flags has
  /// kMdRegFile; NoElem when the file does not exist; IoError (logged with
  /// the errno text) when it cannot be opened or sized.
  virtual Result<std::unique_ptr<MemHandle>> mem_reg_file(const std::string& path, unsigned access);

  /// Allocates memory the md serves best (e.g. shared memory for sm).
  /// Unsupported unless MdAttr::flags has kMdAlloc.
  virtual Result<std::unique_ptr<MemHandle>> mem_alloc(size_t length, MemType type,
                                                       unsigned access);

  /// Appends the packed remote key of `memh` to `out` (at most
  /// MdAttr::rkey_packed_size bytes). InvalidParam when `memh` allows no
  /// remote access.
  virtual Status mkey_pack(const MemHandle& memh, std::vector<uint8_t>* out) const = 0;

  /// Unpacks what a peer's mkey_pack() produced. InvalidParam for input that
  /// is truncated, of another md or of an unknown version.
  virtual Result<std::unique_ptr<Rkey>> rkey_unpack(std::span<const uint8_t> packed) const = 0;

  /// The memory type of a range; Host for mds that only know host memory.
  virtual MemType detect_mem_type(const void* address, size_t length) const;
};

}  // namespace mc::uct
