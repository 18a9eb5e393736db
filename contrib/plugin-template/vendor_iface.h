// SPDX-License-Identifier: Apache-2.0
// vendor iface: listens on an abstract Unix-domain socket, accepts peers,
// and in progress() moves frames both ways: requests (am, put, get, flush)
// are served against the md's registrations, replies go to the endpoints.
#pragma once

#include <uct/api/iface.h>
#include <uct/base/pending_queue.h>

#include <deque>
#include <memory>
#include <vector>

#include "vendor_md.h"

namespace vendor {

class VendorEp;

/// Wire header of every frame, host byte order (peers share one host),
/// followed by `length` payload bytes (none for GetReq and FlushReq).
struct FrameHeader {
  uint8_t type;   ///< FrameType
  uint8_t am_id;  ///< Am only
  uint16_t reserved;
  int32_t status;   ///< replies: the target's Status
  uint64_t length;  ///< payload bytes; GetReq: bytes asked for
  uint64_t addr;    ///< Put, GetReq: target address
  uint64_t key;     ///< Put, GetReq: registration id
  uint64_t req;     ///< GetReq/FlushReq and their replies: the initiator's id
};
static_assert(sizeof(FrameHeader) == 40);

enum FrameType : uint8_t { kAm = 1, kPut, kGetReq, kGetRep, kFlushReq, kFlushRep };

/// One stream socket: bytes to send and bytes received but not parsed yet.
struct Conn {
  int fd = -1;
  VendorEp* owner = nullptr;  ///< the endpoint of an outgoing connection; null when accepted
  std::vector<uint8_t> rx;
  size_t rx_off = 0;
  std::deque<std::vector<uint8_t>> tx;
  size_t tx_off = 0;                 ///< bytes of tx.front() already sent
  size_t tx_bytes = 0;               ///< bytes queued in tx
  Status target_error = Status::Ok;  ///< first refused request since the last flush
  bool broken = false;
};

class VendorIface : public mc::uct::Iface {
 public:
  static Result<std::unique_ptr<mc::uct::Iface>> create(VendorMd* md, VendorConfig config,
                                                        mc::uct::ErrorHandler on_error);
  ~VendorIface() override;

  mc::uct::IfaceAttr query() const override;
  unsigned progress() override;
  std::vector<uint8_t> device_address() const override;
  std::vector<uint8_t> iface_address() const override;
  bool is_reachable(std::span<const uint8_t> device_addr, std::span<const uint8_t> iface_addr,
                    std::string* reason) const override;
  Result<std::unique_ptr<mc::uct::Endpoint>> ep_create(
      std::span<const uint8_t> device_addr, std::span<const uint8_t> iface_addr) override;
  Status flush(mc::uct::Completion* comp) override;

  const VendorConfig& config() const { return config_; }
  mc::uct::PendingQueue& pending() { return pending_; }

  /// Whether `conn` can take `bytes` more now (an empty queue takes any size).
  bool has_room(const Conn& conn, size_t bytes) const {
    return conn.tx_bytes == 0 || conn.tx_bytes + bytes <= config_.tx_queue_max;
  }
  /// Queues a frame and starts sending it. Payload pieces are gathered.
  Status send(Conn& conn, const FrameHeader& hdr, std::span<const mc::uct::Iov> payload);
  /// Closes and forgets an endpoint's connection.
  void detach(Conn* conn);

 private:
  VendorIface(VendorMd* md, VendorConfig config, mc::uct::ErrorHandler on_error);
  Status listen();
  void accept_all();
  unsigned drain_tx(Conn& conn);
  unsigned read_rx(Conn& conn);
  void serve(Conn& conn, const FrameHeader& hdr, const uint8_t* payload);
  void fail(Conn& conn, Status status);

  VendorMd* md_;
  VendorConfig config_;
  mc::uct::ErrorHandler on_error_;
  uint32_t pid_, index_;
  int listen_fd_ = -1;
  std::vector<std::unique_ptr<Conn>> conns_;
  mc::uct::PendingQueue pending_;
};

}  // namespace vendor
