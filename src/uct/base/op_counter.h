// SPDX-License-Identifier: Apache-2.0
// Operations in flight on an endpoint or iface, and the flushes that wait for
// them: what transports that complete operations in progress() share.
#pragma once

#include <cstddef>
#include <vector>

#include "uct/api/types.h"

namespace mc::uct {

/// Not thread-safe: the thread that drives the iface owns it.
struct OpCounter {
  size_t outstanding = 0;
  std::vector<Completion*> flushes;

  /// One operation ended: completes the waiting flushes when none is left.
  void done() {
    if (--outstanding > 0) return;
    std::vector<Completion*> waiting;
    waiting.swap(flushes);
    for (Completion* c : waiting) completion_update(c, Status::Ok);
  }

  /// Ok when nothing is outstanding, else InProgress and `comp` (when not
  /// null) completes with the last operation.
  Status flush(Completion* comp) {
    if (outstanding == 0) return Status::Ok;
    if (comp) flushes.push_back(comp);
    return Status::InProgress;
  }
};

}  // namespace mc::uct
