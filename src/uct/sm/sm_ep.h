// SPDX-License-Identifier: Apache-2.0
// sm endpoint: active messages into the peer's ring; put/get by memcpy into
// mapped sm segments, by cross-memory attach into registered memory, or,
// where CMA is off or refused, by requests the peer serves from its ring.
#pragma once

#include <sys/uio.h>

#include <cstring>
#include <deque>
#include <typeinfo>

#include "uct/api/ep.h"
#include "uct/base/pending_queue.h"
#include "uct/sm/sm_iface.h"
#include "uct/sm/sm_rkey.h"

namespace mc::uct::sm {

class SmEp : public Endpoint {
 public:
  SmEp(SmIface* iface, PeerRing* peer);
  ~SmEp() override;

  Status put_short(const void* buffer, size_t length, uint64_t remote_addr,
                   const Rkey& rkey) override;
  Result<size_t> put_bcopy(PackCallback pack, void* arg, uint64_t remote_addr,
                           const Rkey& rkey) override;
  Status put_zcopy(const Iov* iov, size_t iov_count, uint64_t remote_addr, const Rkey& rkey,
                   Completion* comp) override;
  Status get_bcopy(UnpackCallback unpack, void* arg, size_t length, uint64_t remote_addr,
                   const Rkey& rkey, Completion* comp) override;
  Status get_zcopy(const Iov* iov, size_t iov_count, uint64_t remote_addr, const Rkey& rkey,
                   Completion* comp) override;
  Status am_short(uint8_t id, uint64_t header, const void* payload, size_t length) override;
  Result<size_t> am_bcopy(uint8_t id, PackCallback pack, void* arg) override;
  Status am_zcopy(uint8_t id, const void* header, size_t header_length, const Iov* iov,
                  size_t iov_count, Completion* comp) override;
  Status flush(Completion* comp) override;
  Status pending_add(PendingReq* req) override;
  void pending_purge(const std::function<void(PendingReq*)>& cb) override;
  Status check() override;

  // ---- for the iface and the fallback --------------------------------------

  PeerRing& peer() { return *peer_; }
  /// Ok, or the status the endpoint failed with.
  Status failure() const { return failed_; }
  /// Records the first failure; progress() reports it.
  void fail(Status status);
  /// Whether the failure still has to be reported (and marks it reported).
  bool take_unreported_failure();
  /// Sends queued fragments and retries pending requests; returns events.
  unsigned dispatch();
  /// Queued fragments or pending requests left.
  bool busy() const { return !tx_ops_.empty() || !pending_.empty(); }
  bool scheduled = false;  ///< in the iface's scheduled list

  /// Fallback operations that still wait for fragments to be sent, in order.
  std::deque<uint64_t>& tx_ops() { return tx_ops_; }
  void op_started() { ++outstanding_; }
  void op_done(Status status);
  /// Completes the flush waiters with `status`.
  void complete_flushes(Status status);

 private:
  /// Failed: the failure; queued work ahead: NoResource; else Ok.
  Status can_send() const;
  /// `rkey` as the sm md unpacked it, or null for another md's key. SmRkey
  /// is final: an exact type match accepts what dynamic_cast would, for one
  /// compare of type_info addresses (ours) instead of its walk.
  static const SmRkey* sm_rkey(const Rkey& rkey) {
    return typeid(rkey) == typeid(SmRkey) ? static_cast<const SmRkey*>(&rkey) : nullptr;
  }
  /// One piece to (`write`) or from a mapped segment, after key->check().
  static void copy_mapped(bool write, const SmRkey& key, uint64_t remote_addr, void* local,
                          size_t n) {
    if (n == 0) return;
    uint8_t* remote = key.mapped(remote_addr);
    if (write) {
      std::memcpy(remote, local, n);
    } else {
      std::memcpy(local, remote, n);
    }
  }
  /// Put (`write`) or get by memcpy or CMA. Unsupported: use the ring
  /// fallback.
  Status direct(bool write, const SmRkey& key, const iovec* iov, size_t count, uint64_t remote_addr,
                size_t total);
  /// Checks the key and range, then moves the data directly or through the
  /// ring; `buffered`: the data must be consumed before return (short and
  /// bcopy puts).
  Status rma(bool write, const Iov* iov, size_t count, uint64_t remote_addr, const Rkey& rkey,
             UnpackCallback unpack, void* arg, Completion* comp, bool buffered);

  SmIface* iface_;
  PeerRing* peer_;
  const size_t max_short_;  // the fallback's fragment size, fixed with the iface
  Status failed_ = Status::Ok;
  bool reported_ = false;
  bool cma_;                  // CMA still worth trying
  bool in_dispatch_ = false;  // pending requests may send although queued
  PendingQueue pending_;
  std::deque<uint64_t> tx_ops_;
  size_t outstanding_ = 0;            // fallback operations not yet answered
  Status flush_status_ = Status::Ok;  // first error of an op without completion
  std::vector<Completion*> flush_waiters_;
};

}  // namespace mc::uct::sm
