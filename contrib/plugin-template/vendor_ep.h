// SPDX-License-Identifier: Apache-2.0
// vendor endpoint: one connection to a peer iface; puts and active messages
// are copied into frames, gets and flushes wait for the peer's reply.
#pragma once

#include <uct/api/ep.h>

#include <map>

#include "vendor_iface.h"

namespace vendor {

class VendorEp : public mc::uct::Endpoint {
 public:
  VendorEp(VendorIface* iface, Conn* conn) : iface_(iface), conn_(conn) {}
  ~VendorEp() override;

  Status put_short(const void* buffer, size_t length, uint64_t remote_addr,
                   const mc::uct::Rkey& rkey) override;
  Result<size_t> put_bcopy(mc::uct::PackCallback pack, void* arg, uint64_t remote_addr,
                           const mc::uct::Rkey& rkey) override;
  Status put_zcopy(const mc::uct::Iov* iov, size_t iov_count, uint64_t remote_addr,
                   const mc::uct::Rkey& rkey, mc::uct::Completion* comp) override;
  Status get_bcopy(mc::uct::UnpackCallback unpack, void* arg, size_t length, uint64_t remote_addr,
                   const mc::uct::Rkey& rkey, mc::uct::Completion* comp) override;
  Status get_zcopy(const mc::uct::Iov* iov, size_t iov_count, uint64_t remote_addr,
                   const mc::uct::Rkey& rkey, mc::uct::Completion* comp) override;
  Status am_short(uint8_t id, uint64_t header, const void* payload, size_t length) override;
  Result<size_t> am_bcopy(uint8_t id, mc::uct::PackCallback pack, void* arg) override;
  Status am_zcopy(uint8_t id, const void* header, size_t header_length, const mc::uct::Iov* iov,
                  size_t iov_count, mc::uct::Completion* comp) override;
  Status flush(mc::uct::Completion* comp) override;
  Status pending_add(mc::uct::PendingReq* req) override;
  void pending_purge(const std::function<void(mc::uct::PendingReq*)>& cb) override;

  /// A reply frame from the peer (iface progress).
  void on_reply(const FrameHeader& hdr, const uint8_t* payload);
  /// The connection broke: fails every operation waiting for a reply.
  void on_broken(Status status);
  /// Whether anything was sent since the last completed flush.
  bool dirty() const { return dirty_ || !waiting_.empty(); }

 private:
  struct Waiting {
    mc::uct::UnpackCallback unpack = nullptr;  ///< get_bcopy
    void* arg = nullptr;
    std::vector<mc::uct::Iov> iov;  ///< get_zcopy
    mc::uct::Completion* comp = nullptr;
  };

  Status put(uint64_t remote_addr, const mc::uct::Rkey& rkey,
             std::span<const mc::uct::Iov> payload);
  Status get(uint64_t remote_addr, size_t length, const mc::uct::Rkey& rkey, Waiting w);
  Status am(uint8_t id, std::span<const mc::uct::Iov> payload);

  VendorIface* iface_;
  Conn* conn_;
  std::map<uint64_t, Waiting> waiting_;  ///< gets and flushes by request id
  uint64_t next_req_ = 1;
  bool dirty_ = false;
};

}  // namespace vendor
