// SPDX-License-Identifier: Apache-2.0
// What sm processes say to each other: the packed iface address, and the
// messages that travel in ring slots (active messages, and the put/get
// requests and replies of the CMA fallback).
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "ucs/datastruct/wire.h"
#include "uct/sm/sm_shm.h"

namespace mc::uct::sm {

/// SlotHeader::type.
enum MsgType : uint8_t {
  kMsgAm = 1,      ///< payload: the active message
  kMsgPutReq = 2,  ///< RmaReq + data
  kMsgGetReq = 3,  ///< RmaReq
  kMsgPutAck = 4,  ///< RmaRep
  kMsgGetRep = 5,  ///< RmaRep + data
  kMsgNop = 6,     ///< nothing (a bcopy whose pack overran its slot)
};

/// An iface on this host: its owner process and its ring segment.
///   u8 version (1) | u32 pid | u32 counter | u64 random | u64 owner start
///   time (clock ticks since boot) | u32 ring slot size       (29 bytes, LE)
/// The slot size is there so reachability can refuse a peer whose slots
/// differ from ours (messages are sized for one slot size).
struct IfaceId {
  uint32_t pid = 0;
  uint32_t counter = 0;
  uint64_t random = 0;
  uint64_t start = 0;
  uint32_t slot_size = 0;

  static constexpr uint8_t kVersion = 1;
  static constexpr size_t kPackedSize = 29;

  SegmentName ring_name() const { return SegmentName{pid, SegKind::Ring, counter, random}; }
  /// Orders by segment name: one map entry per ring.
  bool operator<(const IfaceId& o) const {
    if (pid != o.pid) return pid < o.pid;
    if (counter != o.counter) return counter < o.counter;
    return random < o.random;
  }

  void pack(std::vector<uint8_t>* out) const {
    ucs::WireWriter w(out);
    w.u8(kVersion);
    w.u32(pid);
    w.u32(counter);
    w.u64(random);
    w.u64(start);
    w.u32(slot_size);
  }
  /// False for anything but a complete version-1 address.
  bool unpack(std::span<const uint8_t> in) {
    ucs::WireReader r(in);
    const uint8_t version = r.u8();
    pid = r.u32();
    counter = r.u32();
    random = r.u64();
    start = r.u64();
    slot_size = r.u32();
    return r.at_end() && version == kVersion && pid != 0 && slot_size != 0;
  }
};

// The fallback messages are copied out of (and into) slots as these
// structs: both ends run on one host, so native layout and byte order are
// shared; every field is checked by the receiver.

/// A put or get fragment: the initiator asks the target to copy `length`
/// bytes at `remote_addr` of registration `reg_id`, and to answer on the
/// ring of the reply_* iface.                                    (64 bytes)
struct RmaReq {
  uint64_t op_id;
  uint64_t offset;  ///< of this fragment in the operation
  uint64_t reg_id;
  uint64_t remote_addr;
  uint32_t length;
  uint32_t reply_pid;
  uint32_t reply_counter;
  uint32_t reserved;
  uint64_t reply_random;
  uint64_t reply_start;
};
static_assert(sizeof(RmaReq) == 64);

/// The answer to one fragment: its status (ucs::Status as int) and, for a
/// get, `length` bytes after it.                                (24 bytes)
struct RmaRep {
  uint64_t op_id;
  uint64_t offset;
  uint32_t length;
  int32_t status;
};
static_assert(sizeof(RmaRep) == 24);

/// Largest fragment of a fallback put/get in a slot of `capacity` bytes.
inline size_t rma_fragment_size(size_t capacity) {
  return capacity - (sizeof(RmaReq) > sizeof(RmaRep) ? sizeof(RmaReq) : sizeof(RmaRep));
}

}  // namespace mc::uct::sm
