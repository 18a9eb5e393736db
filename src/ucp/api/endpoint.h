// SPDX-License-Identifier: Apache-2.0
// Endpoint: a connection to one remote worker over the lanes wireup chose,
// with put, get, active messages, flush and close. What an application
// sees of it: the endpoint itself is core/endpoint.h's EndpointImpl, which
// this header does not include (nor anything of core/, proto/ or wireup/).
#pragma once

#include <cstdint>
#include <memory>
#include <ostream>
#include <span>
#include <string>
#include <vector>

#include "ucp/api/mem_handle.h"
#include "ucp/api/request.h"
#include "ucp/api/rkey.h"
#include "ucs/sys/visibility.h"

namespace mc::ucp {

/// How close() ends an endpoint.
enum class CloseMode {
  Flush,  ///< complete every operation first
  Force,  ///< cancel what is in flight at once
};

/// One RMA lane as a RailPreference ranks it (Endpoint::rank_lanes).
struct LaneRank {
  size_t lane = 0;      ///< endpoint lane
  unsigned rank = 0;    ///< 0 (best) .. 4 (.. 9 with same_device); not a network device: 0
  bool healthy = true;  ///< false once the lane failed
  /// Whether it carries a large put or get: healthy and best-ranked, or any
  /// healthy lane with round_robin.
  bool carries = false;
};

/// What one lane of an endpoint has carried (Endpoint::lane_counters).
struct LaneCounters {
  size_t lane = 0;              ///< endpoint lane
  size_t local_resource = 0;    ///< its resource, into Context::resources()
  bool healthy = true;          ///< false once the lane failed
  uint64_t rma_bytes = 0;       ///< bytes of puts and gets posted on it
  uint64_t rma_done_bytes = 0;  ///< of which completed
};

/// What one lane of an endpoint is and has carried (Endpoint::lane_info).
struct LaneInfo : LaneCounters {
  std::string local_device;   ///< "tcp/lo"
  std::string remote_device;  ///< the peer's "tcp/lo"
};

/// Made by Worker::ep_create(). Thread safety: as its worker. Destroying an
/// endpoint cancels its requests in progress (they complete with Canceled)
/// and destroys its UCT endpoints.
class MC_API Endpoint {
 public:
  virtual ~Endpoint();
  Endpoint(const Endpoint&) = delete;
  Endpoint& operator=(const Endpoint&) = delete;

  /// Writes `length` bytes from `buffer` to `remote_addr` in the peer's
  /// memory described by `rkey`. The request completes when `buffer` may be
  /// reused; remote completion needs flush(). InvalidParam when the range is
  /// outside the rkey's registration, Unsupported when no lane can put (or
  /// none can access RequestParams::mem_type memory), Canceled after close().
  /// A peer's GPU memory that no lane's key reaches (tcp, sm) goes by remote
  /// staging: the peer stages it, and the request completes with its answer
  /// (complete at the peer then); the peer's errors (InvalidParam for a
  /// range outside its remote-accessible registrations) end the request.
  Result<std::shared_ptr<Request>> put_nbx(const void* buffer, size_t length, uint64_t remote_addr,
                                           const Rkey& rkey, const RequestParams& params = {}) {
    // In line: a small put the endpoint does in the call (short, bcopy)
    // builds its result, the worker's completed request, in the caller's
    // frame, with one call into the library; what may go so is the
    // endpoint's decision (EndpointImpl::build_entries).
    if (length - 1 < put_now_max_ && put_now(buffer, length, remote_addr, rkey, params)) {
      return std::shared_ptr<Request>(std::shared_ptr<Request>(), done_);
    }
    return put(buffer, length, remote_addr, rkey, params);
  }
  /// Reads `length` bytes at `remote_addr` into `buffer`; the request
  /// completes when they are there. Statuses as put_nbx().
  Result<std::shared_ptr<Request>> get_nbx(void* buffer, size_t length, uint64_t remote_addr,
                                           const Rkey& rkey, const RequestParams& params = {});
  /// Sends `length` bytes to the peer's handler `id`: eager below
  /// MC_RNDV_THRESH (in one message or in fragments, over the AM lane or the
  /// eager rails), else by rendezvous (a request to send with an rkey; the
  /// peer gets the payload zero-copy into its own buffer, runs the handler,
  /// and acknowledges; the peer's worker must be progressed meanwhile). The
  /// request completes when `buffer` may be reused: for a rendezvous, once
  /// acknowledged. Unsupported when no lane carries active messages.
  /// Eager messages are posted in the order sent (one waiting for room on
  /// its lane holds back later ones), so on one lane they arrive in order.
  Result<std::shared_ptr<Request>> am_send_nbx(uint16_t id, const void* buffer, size_t length,
                                               const RequestParams& params = {});
  /// Completes when every operation started before it is complete, remotely
  /// for puts. Fails (with the lane's error) when a lane failed holding data
  /// that had completed locally (short, bcopy, eager active messages) since
  /// the previous flush: that data may never have arrived; once per loss.
  Result<std::shared_ptr<Request>> flush(const RequestParams& params = {});
  /// Flush: flushes, then stops accepting operations; Force: cancels every
  /// request in progress and stops at once. Either way the endpoint is then
  /// only fit to be destroyed.
  Result<std::shared_ptr<Request>> close(CloseMode mode, const RequestParams& params = {});

  /// Unpacks a peer's MemHandle::rkey_pack() for the lanes of this
  /// endpoint. InvalidParam for malformed input (logged), Unreachable when
  /// no lane's memory domain has a key in a key of host memory (a key of
  /// GPU memory no lane reaches unpacks: its puts and gets go by remote
  /// staging).
  Result<std::unique_ptr<Rkey>> rkey_unpack(std::span<const uint8_t> packed) const;

  /// Writes the lane selection and the protocol tables (MC_PROTO_INFO).
  void print(std::ostream& os) const;
  /// The lanes that carry puts and gets (rma and rma-bw roles) in the order
  /// `rails` makes of them: healthy first, then by rank, then by the lane
  /// selection's order. What a put or get with these rails will use, for
  /// logs and tools.
  std::vector<LaneRank> rank_lanes(const RailPreference& rails) const;

  /// Every lane, in lane order: devices and bytes carried (tools, the
  /// Transfer Engine's getSegmentPaths).
  std::vector<LaneInfo> lane_info() const;
  /// The same without the device names, into `*out` (its capacity reused):
  /// what a sampler reads often (the Transfer Engine's NIC load).
  void lane_counters(std::vector<LaneCounters>* out) const;

 protected:
  Endpoint() = default;  ///< only EndpointImpl derives

  // The only state of the handle: put_nbx()'s in-line test, which
  // EndpointImpl keeps.
  /// Puts of 1 to put_now_max_ bytes may be done in the call; 0: none.
  size_t put_now_max_ = 0;
  /// The worker's completed request, which such a put returns.
  Request* done_ = nullptr;

 private:
  /// The put in the call (EndpointImpl::put_first_now): true when done
  /// (its callback run), false when the general path must take it.
  bool put_now(const void* buffer, size_t length, uint64_t remote_addr, const Rkey& rkey,
               const RequestParams& params);
  /// Any other put (EndpointImpl::rma).
  Result<std::shared_ptr<Request>> put(const void* buffer, size_t length, uint64_t remote_addr,
                                       const Rkey& rkey, const RequestParams& params);
};

}  // namespace mc::ucp
