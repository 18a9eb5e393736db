// SPDX-License-Identifier: Apache-2.0
// RequestOp: the protocol state behind a Request, driven by the worker.
#pragma once

#include <cstddef>

#include "ucs/status/status.h"

namespace mc::ucp::proto {

/// One protocol instance (a put, a get, an active message, a flush). The
/// worker calls progress() from its progress() until it returns a final
/// status, then keeps the op alive while in_flight() > 0.
class RequestOp {
 public:
  virtual ~RequestOp() = default;
  /// Posts what it can. InProgress, or the final status (Ok or an error).
  virtual ucs::Status progress() = 0;
  /// Stops posting (deadline, cancel); in-flight operations still complete.
  virtual void abort() = 0;
  /// Transport operations posted and not yet completed.
  virtual size_t in_flight() const = 0;
  /// The transports behind this op were destroyed: nothing will complete.
  virtual void orphan() = 0;
};

}  // namespace mc::ucp::proto
