// SPDX-License-Identifier: Apache-2.0
// self endpoint: every operation completes before it returns.
#pragma once

#include "uct/api/ep.h"
#include "uct/self/self_iface.h"

namespace mc::uct::self {

class SelfEp : public Endpoint {
 public:
  explicit SelfEp(SelfIface* iface) : iface_(iface) {}

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

 private:
  /// The local address of a checked remote range.
  Result<uint8_t*> target(uint64_t remote_addr, size_t length, const Rkey& rkey, unsigned access);

  SelfIface* iface_;
};

}  // namespace mc::uct::self
