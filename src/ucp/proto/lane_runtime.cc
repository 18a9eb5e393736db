// SPDX-License-Identifier: Apache-2.0
// On-demand local registrations.
#include "ucp/proto/lane_runtime.h"

namespace mc::ucp::proto {

ucs::Result<const uct::MemHandle*> LocalRegs::for_lane(size_t ep_lane) {
  const LaneRuntime& lane = (*lanes_)[ep_lane];
  if (user_ && user_->contains(buffer_, length_)) {
    if (const uct::MemHandle* h = user_->uct_memh(lane.md_index)) return h;
  }
  auto it = own_.find(lane.md_index);
  if (it != own_.end()) return static_cast<const uct::MemHandle*>(it->second.get());
  MC_ASSIGN_OR_RETURN(std::unique_ptr<uct::MemHandle> h,
                      lane.md->mem_reg(buffer_, length_, uct::kAccessLocal));
  const uct::MemHandle* raw = h.get();
  own_.emplace(lane.md_index, std::move(h));
  return raw;
}

}  // namespace mc::ucp::proto
