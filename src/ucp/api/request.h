// SPDX-License-Identifier: Apache-2.0
// Request: the handle of a non-blocking UCP operation (put, get, active
// message, flush): test, wait, cancel, a completion callback, a deadline.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ucs/config/parser.h"
#include "ucs/status/status.h"
#include "ucs/sys/visibility.h"
#include "uct/api/types.h"

namespace mc::ucp {

using ucs::Result;
using ucs::Status;

class WorkerImpl;
class EndpointImpl;
class MemHandle;

/// Called once when a request completes, with its final status (Ok, or the
/// error that ended it: Timeout, Canceled, a transport error). It runs on the
/// thread that completes the request: inside Worker::progress(), or inside
/// the call that started the operation when it completes at once.
using Callback = std::function<void(Status status)>;

/// Devices one put or get should take (topology-aware path choice, as the
/// Transfer Engine derives them from both sides' NIC priority matrices).
/// Each lane on a network device gets a rank: 0, 1 or 2 for its local device
/// being preferred, secondary or neither, plus the same for its remote
/// device; a side whose two lists are empty ranks every device 0. The
/// operation's slices go to the best-ranked healthy lanes; a slice whose
/// lane fails moves to the best-ranked lane left, so secondary devices take
/// over when the preferred ones fail, and other devices after them. Lanes of
/// shared memory and self are never ranked down. A name matches a device of
/// that name or one of its ports: "mlx5_0" matches "mlx5_0:1".
struct RailPreference {
  std::vector<std::string> local_preferred;
  std::vector<std::string> local_secondary;
  std::vector<std::string> remote_preferred;
  std::vector<std::string> remote_secondary;
  /// Destination device affinity (MC_ENABLE_DEST_DEVICE_AFFINITY): among
  /// lanes of equal rank, one whose remote device has its local device's
  /// name (ports aside) comes first; ranks become 2 x rank + 1 for a lane
  /// whose names differ.
  bool same_device = false;
  /// Round robin over the paths (MC_PATH_ROUNDROBIN): every healthy lane
  /// carries the slices of a large put or get, whatever its rank; ranks only
  /// order the lanes a failed slice moves to.
  bool round_robin = false;
  /// True when nothing is asked (no list names a device, no flag is set).
  bool empty() const {
    return local_preferred.empty() && local_secondary.empty() && remote_preferred.empty() &&
           remote_secondary.empty() && !same_device && !round_robin;
  }
};

/// Optional arguments of every non-blocking operation.
struct RequestParams {
  Callback callback;  ///< may be empty
  /// A registration covering the local buffer (from MemHandle::map). With it,
  /// zero-copy protocols need no registration of their own.
  const MemHandle* memh = nullptr;
  /// Overrides MC_TRANSFER_TIMEOUT for this request; Duration::max(): none.
  std::optional<ucs::config::Duration> timeout;
  /// Memory type of the local buffer: it selects the protocol table; an
  /// operation on memory no lane can access fails with Unsupported.
  uct::MemType mem_type = uct::MemType::Host;
  /// Devices a put or get should take; null or empty: the lanes' own order.
  /// Read during the call only. Ignored by active messages and flush.
  const RailPreference* rails = nullptr;
};

namespace proto {
class RequestOp;
}

/// A non-blocking operation in flight or completed. Created by the
/// operations of Endpoint and Worker, never directly. An operation that
/// completes in the call that started it (a small put done in place) may
/// return the worker's one shared request, completed with Ok: it lives as
/// long as the worker, not as long as the handle. Thread safety: as its
/// worker (Worker's thread modes): in multi mode any thread may test, wait,
/// cancel or read the status.
///
/// Completion: a request that ends with its operation's own status, Ok or
/// an error, completes only once every transport operation it started has
/// completed too, so nothing touches the caller's buffer after that (a
/// failed fragment of a staged put waits for the copies and puts of the
/// others). The exceptions, which complete at once: cancel(), and the
/// deadline (MC_TRANSFER_TIMEOUT, RequestParams::timeout), which also bounds
/// that wait; what was already handed to a transport then finishes in the
/// background, and the buffer must stay valid until it has (a flush of the
/// endpoint, or the endpoint destroyed).
class MC_API Request {
  struct Key {};  ///< only the worker makes requests

 public:
  /// For the worker's allocation (one block with the shared count); `op`
  /// null: a request completed by the call that started it.
  Request(Key, WorkerImpl* worker, EndpointImpl* ep, uint64_t seq, Callback callback,
          uint64_t deadline_ns, std::unique_ptr<proto::RequestOp> op);
  ~Request();
  Request(const Request&) = delete;
  Request& operator=(const Request&) = delete;

  /// InProgress until the request completes, then its final status.
  Status status() const { return status_; }
  /// True once the request has completed (successfully or not).
  bool completed() const { return status_ != Status::InProgress; }
  /// Progresses the worker once and returns status().
  Status test();
  /// Progresses the worker until the request completes; returns its final
  /// status. Bounded by the request's deadline unless that is infinite.
  Status wait();
  /// Completes the request with Canceled if it is still in progress;
  /// operations already handed to a transport finish in the background.
  void cancel();
  /// True once the request has completed and nothing it handed a transport
  /// is in flight any more: its buffer may be reused or freed. The same as
  /// completed() but after cancel() or the deadline, which complete first.
  bool settled() const;
  /// Absolute CLOCK_MONOTONIC deadline in nanoseconds; UINT64_MAX: none.
  uint64_t deadline_ns() const { return deadline_ns_; }

 private:
  friend class WorkerImpl;  // makes, advances, cancels and orphans requests

  /// Moves the operation forward and enforces the deadline (worker progress).
  void advance(uint64_t now_ns);
  void complete(Status status);

  WorkerImpl* worker_;
  EndpointImpl* ep_;  ///< null for worker-level requests or after the endpoint went
  uint64_t seq_;      ///< order among the endpoint's requests (flush)
  Callback callback_;
  uint64_t deadline_ns_;
  std::unique_ptr<proto::RequestOp> op_;  ///< null once completed at its start
  /// The operation's final status while its transport operations settle;
  /// InProgress before it gave one.
  Status settling_ = Status::InProgress;
  std::atomic<Status> status_{Status::InProgress};  ///< read by any thread in multi mode
};

}  // namespace mc::ucp
