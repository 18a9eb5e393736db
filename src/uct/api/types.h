// SPDX-License-Identifier: Apache-2.0
// UCT value types: memory and device types, capability flags, attributes and
// the performance model, completions, iovecs, pending requests, callbacks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ucs/status/status.h"

namespace mc::uct {

using ucs::Result;
using ucs::Status;

/// Version of the UCT C++ interfaces a transport module implements; a module
/// built for another version is refused by the component loader.
inline constexpr uint32_t kApiVersion = 1;

/// Where memory lives.
/// File: a file or block device registered with MemoryDomain::mem_reg_file();
/// its "addresses" are byte offsets into the file.
enum class MemType : uint8_t { Host = 0, Cuda = 1, CudaManaged = 2, File = 3, Unknown = 255 };
const char* mem_type_name(MemType type);
/// A set of memory types: bit (1 << MemType).
using MemTypeMask = uint32_t;
constexpr MemTypeMask mem_type_bit(MemType t) { return 1u << static_cast<unsigned>(t); }

/// What kind of device a transport runs on.
enum class DeviceType : uint8_t { Net, Shm, Self, Acc, Storage };
const char* device_type_name(DeviceType type);

/// Capability flags of an iface (IfaceAttr::cap).
enum Cap : uint64_t {
  kCapAmShort = 1ull << 0,
  kCapAmBcopy = 1ull << 1,
  kCapAmZcopy = 1ull << 2,
  kCapPutShort = 1ull << 3,
  kCapPutBcopy = 1ull << 4,
  kCapPutZcopy = 1ull << 5,
  kCapGetShort = 1ull << 6,
  kCapGetBcopy = 1ull << 7,
  kCapGetZcopy = 1ull << 8,
  kCapPending = 1ull << 9,        ///< pending_add() works
  kCapEventFd = 1ull << 10,       ///< event_fd() / arm() work
  kCapConnectToIface = 1ull << 11,  ///< ep_create() from a remote iface address
  kCapConnectToEp = 1ull << 12,     ///< ep_create() + ep address exchange
  kCapErrHandlePeerFailure = 1ull << 13,  ///< a dead peer is reported, not hung on
  kCapAmThreadSafe = 1ull << 14,   ///< AM handlers may run on the iface's own thread
  /// ep_create() takes only this iface's own address: a copy engine (cuda_copy)
  /// or a storage transport (nvmeof) used inside this process, never a lane
  /// to a peer (UCP's lane selection needs kCapConnectToIface).
  kCapConnectToSelf = 1ull << 15,
};

/// Names of the set bits of `cap`, "am_short|put_zcopy|...".
std::string cap_string(uint64_t cap);

/// time(n) = c + m * n, in seconds.
struct LinearFunc {
  double c = 0;
  double m = 0;
  double at(double n) const { return c + m * n; }
};

/// Bandwidth in bytes per second: `dedicated` for this iface alone, `shared`
/// split among the ifaces of the same device. Effective = dedicated + shared / n.
struct Bandwidth {
  double dedicated = 0;
  double shared = 0;
  double total() const { return dedicated + shared; }
};

/// Size limits of one operation family (put, get or am).
struct OpLimits {
  size_t max_short = 0;
  size_t max_bcopy = 0;
  size_t min_zcopy = 0;
  size_t max_zcopy = 0;
  size_t max_iov = 1;
  size_t max_hdr = 0;  ///< am zcopy header
};

/// What an iface can do and how fast; UCP scores transports from this.
struct IfaceAttr {
  uint64_t cap = 0;            ///< Cap bits
  OpLimits put, get, am;
  LinearFunc latency;          ///< one-way latency of an n-byte message, seconds
  Bandwidth bandwidth;         ///< bytes per second
  double overhead = 0;         ///< CPU time to post one operation, seconds
  int priority = 0;            ///< tie-breaker: higher wins
  size_t device_addr_len = 0;
  size_t iface_addr_len = 0;
  size_t ep_addr_len = 0;
  MemTypeMask access_mem_types = mem_type_bit(MemType::Host);  ///< memory ops may touch
  /// Between two processes in one network namespace every device of this
  /// transport goes through the kernel's loopback (tcp): a second rail to
  /// such a peer adds copies, not bandwidth (UCP's MC_LOOPBACK_RAILS).
  bool kernel_loopback = false;
};

/// Memory-domain capabilities.
enum MdFlag : uint64_t {
  kMdAlloc = 1ull << 0,     ///< mem_alloc() gives transport-friendly memory
  kMdReg = 1ull << 1,       ///< mem_reg() works
  kMdNeedRkey = 1ull << 2,  ///< remote access needs a packed rkey
  kMdRegFile = 1ull << 3,   ///< mem_reg_file() works (storage transports)
};

/// What a memory domain can do.
struct MdAttr {
  uint64_t flags = 0;
  MemTypeMask reg_mem_types = 0;     ///< memory it can register
  MemTypeMask access_mem_types = 0;  ///< memory its transports can touch
  MemTypeMask alloc_mem_types = 0;   ///< memory mem_alloc() can give
  MemTypeMask detect_mem_types = 0;  ///< memory detect_mem_type() recognises
  LinearFunc reg_cost;               ///< seconds to register n bytes
  size_t max_alloc = 0;
  size_t max_reg = SIZE_MAX;
  size_t rkey_packed_size = 0;       ///< upper bound of mkey_pack() output
  /// Facts particular to the md, one line each, for people (mc_info -d):
  /// "GPU memory registration: none (libcuda.so.1 not found: ...)".
  std::vector<std::string> notes;
};

/// Access requested when registering memory.
enum MemAccess : unsigned {
  kAccessLocal = 1u << 0,        ///< local source or destination of operations
  kAccessRemoteRead = 1u << 1,   ///< peers may get from it
  kAccessRemoteWrite = 1u << 2,  ///< peers may put into it
  kAccessRemote = kAccessRemoteRead | kAccessRemoteWrite,
  kAccessAll = kAccessLocal | kAccessRemote,
};

/// Completion of an operation that returned InProgress. `count` is the
/// number of operations still due; each one decrements it, the first error
/// is kept in `status`, and `func` runs when count reaches zero. Called from
/// the thread that runs the iface's progress().
struct Completion {
  void (*func)(Completion* self) = nullptr;
  int count = 1;
  Status status = Status::Ok;
  void* arg = nullptr;  ///< free for the caller
};

/// Marks one operation of `comp` done with `status` (a transport's helper).
void completion_update(Completion* comp, Status status);

/// A source or destination piece for zcopy operations. `memh` is the
/// registration covering it from this iface's memory domain, or null where
/// the transport needs none.
struct Iov {
  void* buffer = nullptr;
  size_t length = 0;
  const class MemHandle* memh = nullptr;
};

/// Total length of `iov`.
size_t iov_length(const Iov* iov, size_t count);

/// An operation that waits for resources (NoResource). The iface calls
/// `func` when resources free up; returning Ok removes it, NoResource keeps it.
struct PendingReq {
  Status (*func)(PendingReq* self) = nullptr;
  PendingReq* next = nullptr;  ///< owned by the iface while queued
  void* arg = nullptr;
};

/// bcopy source: writes the payload into `dest` (at most the op's max_bcopy
/// bytes) and returns its length.
using PackCallback = size_t (*)(void* dest, void* arg);

/// bcopy destination: copies `length` bytes of `data` into the user's buffer.
using UnpackCallback = void (*)(void* arg, const void* data, size_t length);

/// Flags passed to an AM handler.
enum AmFlag : unsigned {
  kAmDesc = 1u << 0,  ///< the data may be kept by returning InProgress (not offered yet)
};

/// Active-message handler: `data` holds `length` bytes (for short messages the
/// 8-byte header first, then the payload). Returns Ok. Runs in progress().
using AmHandler = std::function<Status(const void* data, size_t length, unsigned flags)>;

/// Highest AM id + 1.
inline constexpr unsigned kAmIdMax = 32;

class Endpoint;

/// Called once when an endpoint fails (peer died, connection reset, timeout).
/// Runs in progress(); the endpoint must then be destroyed.
using ErrorHandler = std::function<void(Endpoint* ep, Status status)>;

/// A transport on a device, as offered by a memory domain.
struct TlResource {
  std::string tl_name;   ///< "tcp", "sm", "self"
  std::string dev_name;  ///< "lo", "eth0", "memory"
  DeviceType dev_type = DeviceType::Net;
  int numa_node = -1;    ///< -1 when unknown
};

}  // namespace mc::uct
