// SPDX-License-Identifier: Apache-2.0
// sm iface: owns a shared-memory receive ring that every peer process sends
// into, maps the rings of its peers, and in progress() delivers active
// messages, serves and completes ring-fallback puts/gets, retries pending
// work, and watches peer processes.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <vector>

#include "uct/api/iface.h"
#include "uct/sm/sm_config.h"
#include "uct/sm/sm_md.h"
#include "uct/sm/sm_peer.h"
#include "uct/sm/sm_proto.h"
#include "uct/sm/sm_ring.h"
#include "uct/sm/sm_shm.h"

namespace mc::uct::sm {

class SmEp;
class RmaFallback;

/// Largest am_zcopy header.
inline constexpr size_t kMaxAmHeader = 128;
/// Most iov entries of one zcopy operation.
inline constexpr size_t kMaxIov = 16;

class SmIface : public Iface {
 public:
  /// Creates the receive ring segment. Endpoints must be destroyed before
  /// their iface.
  static Result<std::unique_ptr<SmIface>> create(SmMd* md, const SmConfig& config,
                                                 const IfaceParams& params);
  ~SmIface() override;

  IfaceAttr query() const override;
  unsigned progress() override;
  std::vector<uint8_t> device_address() const override;
  std::vector<uint8_t> iface_address() const override;
  bool is_reachable(std::span<const uint8_t> device_addr, std::span<const uint8_t> iface_addr,
                    std::string* reason) const override;
  Result<std::unique_ptr<Endpoint>> ep_create(std::span<const uint8_t> device_addr,
                                              std::span<const uint8_t> iface_addr) override;
  Status flush(Completion* comp) override;

  // ---- for endpoints and the fallback -------------------------------------

  const SmConfig& config() const { return config_; }
  const IfaceId& id() const { return id_; }
  RmaFallback& fallback() { return *fallback_; }
  /// Payload bytes of a slot (the same in every sm ring this iface maps:
  /// peers with another geometry are refused).
  size_t capacity() const { return ring_.capacity(); }
  /// A bounce buffer of capacity() bytes, for bcopy.
  uint8_t* bounce() { return bounce_.data(); }

  /// The ring of iface `id`, mapped on first use and kept.
  Result<PeerRing*> peer(const IfaceId& id);

  /// Makes progress() visit `ep` (pending requests or queued fragments).
  void schedule(SmEp* ep);
  /// A fallback reply waits in some PeerRing::replies.
  void note_replies() { replies_waiting_ = true; }
  /// Makes progress() report `ep`'s failure.
  void note_failure() { failures_ = true; }
  /// Called when the fallback's last outstanding operation completed.
  void ops_drained();
  /// Called by ~SmEp.
  void ep_destroyed(SmEp* ep);

 private:
  SmIface(SmMd* md, const SmConfig& config, const IfaceParams& params,
          std::unique_ptr<ShmSegment> segment, Ring ring, IfaceId id);

  /// Decodes a peer's addresses into `id`: Ok, InvalidParam when malformed,
  /// Unreachable when it cannot share memory with us; `reason` says why.
  Status parse_peer(std::span<const uint8_t> device_addr, std::span<const uint8_t> iface_addr,
                    IfaceId* id, std::string* reason) const;
  /// Handles up to one ring's worth of received messages.
  unsigned poll_ring();
  void handle(const SlotHeader& slot, const uint8_t* payload);
  /// Sends queued fallback replies to their rings.
  unsigned send_replies();
  /// Visits the scheduled endpoints.
  unsigned progress_eps();
  /// Peer liveness, and reclaiming ring slots of dead producers.
  void check_peers();
  /// Completes failed endpoints' operations and calls the error handler.
  unsigned report_failures();

  SmConfig config_;
  ErrorHandler err_handler_;
  std::unique_ptr<ShmSegment> segment_;
  Ring ring_;  // consumer view of our own ring
  IfaceId id_;
  std::unique_ptr<RmaFallback> fallback_;
  std::vector<uint8_t> bounce_;
  std::map<IfaceId, std::unique_ptr<PeerRing>> peers_;
  std::set<IfaceId> unmappable_;  // rings that failed to map (names are never reused)
  std::vector<SmEp*> eps_;        // every live endpoint
  std::vector<SmEp*> scheduled_;  // endpoints with work; null where one went away
  std::vector<Completion*> flush_waiters_;
  uint64_t next_check_ns_ = 0;
  uint32_t progress_calls_ = 0;  ///< the peer check reads its clock every 16th
  bool failures_ = false;
  bool replies_waiting_ = false;
  bool polling_ = false;  // an AM handler re-entered progress()
};

}  // namespace mc::uct::sm
