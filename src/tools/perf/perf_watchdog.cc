// SPDX-License-Identifier: Apache-2.0
// Watchdog.
#include "tools/perf/perf_watchdog.h"

#include <sched.h>

#include "ucs/log/log.h"

namespace mc::perf {

void Watchdog::fail(Status status, const std::string& why) {
  if (failure_ != Status::Ok) return;
  MC_LOG(error) << why << ": " << ucs::status_string(status);
  failure_ = is_error(status) ? status : Status::IoError;
}

Status Watchdog::check_slow(uint64_t mark, bool limit) {
  if (failure_ != Status::Ok) return failure_;
  const auto now = std::chrono::steady_clock::now();
  if (limit && mark != last_mark_) {
    last_mark_ = mark;
    last_move_ = now;
  } else {
    // Nothing moved for kSpins spins: let a peer that shares this CPU run.
    sched_yield();
    if (limit && timeout_.count() >= 0 && now - last_move_ > timeout_) {
      MC_LOG(error) << "no progress for " << static_cast<double>(timeout_.count()) / 1000.0
                    << " s: the peer stopped answering (see --timeout)";
      failure_ = Status::Timeout;
      return failure_;
    }
  }
  if (rte_ && now >= next_peer_check_) {
    next_peer_check_ = now + std::chrono::milliseconds(10);
    const Result<bool> alive = rte_->poll();
    if (!alive.ok()) {
      failure_ = alive.status();
      return failure_;
    }
  }
  return Status::Ok;
}

}  // namespace mc::perf
