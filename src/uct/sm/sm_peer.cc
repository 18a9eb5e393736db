// SPDX-License-Identifier: Apache-2.0
// Peer rings.
#include "uct/sm/sm_peer.h"

#include <cstring>

#include "ucs/log/log.h"

namespace mc::uct::sm {

Result<std::unique_ptr<PeerRing>> PeerRing::attach(const IfaceId& id, uint32_t tag) {
  MC_ASSIGN_OR_RETURN(std::unique_ptr<ShmSegment> segment,
                      ShmSegment::attach(id.ring_name(), id.start));
  std::optional<Ring> ring = Ring::attach(segment->data(), segment->data_size());
  if (!ring) {
    MC_LOG(error) << "sm: segment " << id.ring_name().str() << " does not hold a valid ring";
    return Status::BadData;
  }
  return std::unique_ptr<PeerRing>(new PeerRing(id, tag, std::move(segment), *ring));
}

bool PeerRing::send(uint8_t type, uint8_t am_id,
                    std::initializer_list<std::span<const uint8_t>> parts) {
  Ring::Claim c;
  if (!ring_.claim(tag_, &c)) return false;
  uint8_t* p = c.payload();
  for (const auto& part : parts) {
    if (!part.empty()) std::memcpy(p, part.data(), part.size());
    p += part.size();
  }
  ring_.publish(c, type, am_id, static_cast<uint32_t>(p - c.payload()));
  return true;
}

}  // namespace mc::uct::sm
