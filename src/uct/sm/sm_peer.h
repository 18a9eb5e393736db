// SPDX-License-Identifier: Apache-2.0
// PeerRing: this process's producer view of another iface's receive ring
// (mapped once per iface and peer), with a watch on the peer's process and
// the fallback replies that wait for room in that ring.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <vector>

#include "uct/sm/sm_proc.h"
#include "uct/sm/sm_proto.h"
#include "uct/sm/sm_ring.h"
#include "uct/sm/sm_shm.h"

namespace mc::uct::sm {

class PeerRing {
 public:
  /// Maps the ring of iface `id`, checking its header, geometry and owner
  /// (start time included). Unreachable when it is gone; BadData when it
  /// is not a valid ring. `tag` is this process's pid (the claim tag).
  static Result<std::unique_ptr<PeerRing>> attach(const IfaceId& id, uint32_t tag);

  const IfaceId& id() const { return id_; }
  Ring& ring() { return ring_; }
  size_t capacity() const { return ring_.capacity(); }

  /// Copies `parts` into one slot and publishes it. False when the ring is
  /// full (nothing was sent). The parts must fit capacity().
  bool send(uint8_t type, uint8_t am_id, std::initializer_list<std::span<const uint8_t>> parts);

  /// Claims a slot to fill in place (bcopy); then publish().
  bool claim(Ring::Claim* c) { return ring_.claim(tag_, c); }
  void publish(const Ring::Claim& c, uint8_t type, uint8_t am_id, uint32_t length) {
    ring_.publish(c, type, am_id, length);
  }

  /// False once the peer process is known dead; checks now (cheap: a poll
  /// of a pidfd).
  bool alive() { return watch_.alive(); }

  /// Fallback replies (type, message) waiting for room, oldest first.
  std::deque<std::pair<uint8_t, std::vector<uint8_t>>> replies;
  /// Endpoints that send to this ring.
  unsigned refs = 0;
  /// The peer's death was seen and its endpoints failed.
  bool death_handled = false;

 private:
  PeerRing(const IfaceId& id, uint32_t tag, std::unique_ptr<ShmSegment> segment, Ring ring)
      : id_(id),
        tag_(tag),
        segment_(std::move(segment)),
        ring_(ring),
        watch_(static_cast<pid_t>(id.pid), id.start) {}

  IfaceId id_;
  uint32_t tag_;
  std::unique_ptr<ShmSegment> segment_;
  Ring ring_;
  PeerWatch watch_;
};

}  // namespace mc::uct::sm
