// SPDX-License-Identifier: Apache-2.0
// Endpoint: a connection from an iface to one peer iface; every data
// operation of UCT.
#pragma once

#include <functional>

#include "uct/api/md.h"
#include "uct/api/types.h"

namespace mc::uct {

/// Return values of every operation: Ok (done locally: the source buffer may
/// be reused), InProgress (the completion runs later), NoResource (nothing
/// was done: progress, or pending_add(), then retry), or an error (the
/// endpoint is broken). Remote completion of puts is only guaranteed by a
/// completed flush(). Operations the iface's cap lacks return Unsupported.
/// Thread safety: as the iface.
class Endpoint {
 public:
  virtual ~Endpoint() = default;
  Endpoint(const Endpoint&) = delete;
  Endpoint& operator=(const Endpoint&) = delete;

  /// Puts up to put.max_short bytes from `buffer` at `remote_addr`.
  virtual Status put_short(const void* buffer, size_t length, uint64_t remote_addr,
                           const Rkey& rkey);
  /// Puts what `pack` writes (up to put.max_bcopy); returns its length.
  virtual Result<size_t> put_bcopy(PackCallback pack, void* arg, uint64_t remote_addr,
                                   const Rkey& rkey);
  /// Puts the gathered `iov` straight from user memory.
  virtual Status put_zcopy(const Iov* iov, size_t iov_count, uint64_t remote_addr,
                           const Rkey& rkey, Completion* comp);
  /// Gets `length` bytes (up to get.max_bcopy) and hands them to `unpack`.
  virtual Status get_bcopy(UnpackCallback unpack, void* arg, size_t length, uint64_t remote_addr,
                           const Rkey& rkey, Completion* comp);
  /// Gets into the scattered `iov`.
  virtual Status get_zcopy(const Iov* iov, size_t iov_count, uint64_t remote_addr,
                           const Rkey& rkey, Completion* comp);

  /// Active message: the 8-byte `header` then `length` bytes of `payload`
  /// (together up to am.max_short).
  virtual Status am_short(uint8_t id, uint64_t header, const void* payload, size_t length);
  /// Active message of what `pack` writes (up to am.max_bcopy); returns its length.
  virtual Result<size_t> am_bcopy(uint8_t id, PackCallback pack, void* arg);
  /// Active message of `header` (up to am.max_hdr) and the gathered `iov`.
  virtual Status am_zcopy(uint8_t id, const void* header, size_t header_length, const Iov* iov,
                          size_t iov_count, Completion* comp);

  /// Completes when every operation posted on this endpoint is complete
  /// remotely. Ok: nothing outstanding; InProgress: `comp` runs later.
  virtual Status flush(Completion* comp) = 0;

  /// Orders operations posted after it after those posted before it.
  virtual Status fence();

  /// Queues `req` to be called when resources free up. Busy when resources
  /// are available now (retry the operation instead).
  virtual Status pending_add(PendingReq* req);

  /// Removes every queued request, calling `cb` on each.
  virtual void pending_purge(const std::function<void(PendingReq*)>& cb);

  /// Checks that the peer is alive; a dead peer is reported through the
  /// iface's error handler. Ok or InProgress.
  virtual Status check();

  /// Where the connection stands: Ok once it is established (at once for a
  /// transport that connects inside ep_create()), InProgress while it is
  /// being established, or the error that ended it. Operations may be posted
  /// before it is Ok; a caller that has other paths (UCP re-connecting a
  /// failed lane) waits for Ok instead. Non-blocking.
  virtual Status connect_status();

 protected:
  Endpoint() = default;
};

}  // namespace mc::uct
