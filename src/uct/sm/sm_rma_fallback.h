// SPDX-License-Identifier: Apache-2.0
// The ring fallback of put/get (when CMA is off or refused): the initiator
// sends fragment requests into the target's ring, the target's progress()
// checks them against its own registrations, copies, and replies into the
// initiator's ring; an operation completes when every fragment is answered.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "uct/api/types.h"

namespace mc::uct::sm {

class SmEp;
class SmIface;

class RmaFallback {
 public:
  explicit RmaFallback(SmIface* iface);

  /// Bytes of one fragment: every short/bcopy put or get fits one.
  size_t fragment_size() const { return fragment_size_; }

  /// Starts a put (`unpack` null) or get of `total` bytes at `remote_addr`
  /// of registration `reg_id` in the peer of `ep`: data from / to `iov`,
  /// or, for get_bcopy, handed to `unpack`. `buffered` (short and bcopy
  /// puts, at most fragment_size()): the data is copied into the ring now
  /// and Ok returned; else InProgress, `comp` runs when every fragment is
  /// answered, and fragments the ring has no room for are sent from
  /// progress(). NoResource when not even the first fragment fits.
  Status start(SmEp* ep, bool write, uint64_t reg_id, const Iov* iov, size_t count, size_t total,
               uint64_t remote_addr, UnpackCallback unpack, void* arg, Completion* comp,
               bool buffered);

  /// Sends what `ep`'s queued operations have left, while its peer's ring
  /// has room. Returns fragments sent.
  unsigned push(SmEp* ep);

  /// Target side: a kMsgPutReq / kMsgGetReq from the ring.
  void serve(uint8_t type, std::span<const uint8_t> msg);
  /// Initiator side: a kMsgPutAck / kMsgGetRep from the ring.
  void complete(uint8_t type, std::span<const uint8_t> msg);

  /// Completes every operation of `ep` with `status`, answered or not.
  void fail_ep(SmEp* ep, Status status);

  bool idle() const { return ops_.empty(); }

 private:
  struct Op {
    SmEp* ep = nullptr;
    bool write = false;
    uint64_t reg_id = 0;
    uint64_t remote_addr = 0;
    std::vector<Iov> iov;
    UnpackCallback unpack = nullptr;
    void* arg = nullptr;
    size_t total = 0;
    size_t sent = 0;         // bytes requested so far
    unsigned in_flight = 0;  // fragments sent and not answered
    Status status = Status::Ok;
    Completion* comp = nullptr;
  };

  /// Sends the next fragment of `op`; false when the ring is full.
  bool send_fragment(uint64_t id, Op& op);
  /// Whether `op` has nothing left to send or to wait for.
  static bool done(const Op& op) {
    return op.in_flight == 0 && (op.sent == op.total || is_error(op.status));
  }
  void finish(uint64_t id);

  SmIface* iface_;
  size_t fragment_size_;
  std::unordered_map<uint64_t, Op> ops_;
  uint64_t next_id_ = 1;
  std::vector<uint8_t> reply_;  // a reply being built
};

}  // namespace mc::uct::sm
