// SPDX-License-Identifier: Apache-2.0
// What an operation needs of an endpoint's lane at run time, and the local
// registrations one operation makes on demand.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "ucp/api/mem_handle.h"
#include "uct/api/ep.h"

namespace mc::ucp::proto {

/// One lane of an endpoint: its UCT endpoint, memory domain and attributes.
struct LaneRuntime {
  uct::Endpoint* ep = nullptr;
  uct::MemoryDomain* md = nullptr;
  size_t md_index = 0;  ///< into Context::mds()
  uct::IfaceAttr attr;
  double bandwidth = 0;                  ///< of the pair, as lane selection scored it
  ucs::Status status = ucs::Status::Ok;  ///< an error once the lane failed
  /// A put or active message completed locally on it (short, bcopy): only a
  /// flush tells whether it arrived, so a flush error on this lane counts
  /// even after the lane failed. Set by the ops; cleared when the lane fails,
  /// which counts as a possible loss (proto::LossCount).
  mutable bool local_completions = false;
  /// Payload bytes of the put and get slices posted on it (statistics,
  /// tests, the Transfer Engine's path report). Never cleared.
  mutable uint64_t rma_bytes = 0;
  /// Of those, the bytes whose slice has completed: at once (a put short or
  /// bcopy) or by its transport's completion, an error included. rma_bytes -
  /// rma_done_bytes are in flight on the lane now (the Transfer Engine's NIC
  /// load statistics). Never cleared.
  mutable uint64_t rma_done_bytes = 0;
};

/// Registrations of one user buffer for the lanes of one operation: the
/// user's MemHandle where it covers the buffer, else one made on demand and
/// released with this object. Not thread-safe.
class LocalRegs {
 public:
  LocalRegs(const std::vector<LaneRuntime>* lanes, void* buffer, size_t length,
            const MemHandle* user)
      : lanes_(lanes), buffer_(buffer), length_(length), user_(user) {}

  /// The registration covering the buffer on lane `ep_lane`'s md; the error
  /// of mem_reg when one had to be made and failed.
  ucs::Result<const uct::MemHandle*> for_lane(size_t ep_lane);

 private:
  const std::vector<LaneRuntime>* lanes_;
  void* buffer_;
  size_t length_;
  const MemHandle* user_;
  std::map<size_t, std::unique_ptr<uct::MemHandle>> own_;  ///< by md index
};

}  // namespace mc::ucp::proto
