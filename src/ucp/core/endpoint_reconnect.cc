// SPDX-License-Identifier: Apache-2.0
// Endpoint: failed lanes, and connecting them again in the background with
// backoff (MC_LANE_RECONNECT_INTERVAL) until they carry operations again.
#include <algorithm>
#include <chrono>

#include "ucp/core/endpoint.h"
#include "ucp/core/worker.h"
#include "ucs/log/log.h"
#include "ucs/sys/sys.h"

namespace mc::ucp {

namespace {

uint64_t interval_ns(const Context& ctx) {
  const auto d = ctx.config().lane_reconnect_interval;
  return d.count() > 0 ? static_cast<uint64_t>(d.count()) : 0;
}

// Most a backoff grows to, in intervals.
constexpr uint64_t kMaxBackoff = 8;

}  // namespace

Result<std::unique_ptr<uct::Endpoint>> EndpointImpl::lane_connect(size_t lane) const {
  const wireup::Lane& l = selection_.lanes[lane];
  const wireup::AddressEntry& remote = peer_.ifaces[l.remote];
  const WorkerIface& wi = worker_->lane_iface(l.local);
  return wi.iface->ep_create(remote.device_addr, remote.iface_addr);
}

void EndpointImpl::lane_failed(size_t lane, Status status, const std::string& why) {
  runtime_[lane].status = status;
  if (runtime_[lane].local_completions) {
    // What completed locally there may never arrive: flushes must say so
    // (proto::LossCount), whatever becomes of the lane.
    losses_.note(status);
    worker_->note_loss(status);
    runtime_[lane].local_completions = false;
  }
  LaneReconnect& rc = reconnect_[lane];
  rc = LaneReconnect{};
  rc.why = why;
  const uint64_t interval = interval_ns(worker_->context());
  // Logged once per failure; the attempts that follow log at debug level.
  MC_LOG(warn) << "ucp: lane " << lane << " (" << selection_.candidate_of(lane).name << ") to "
               << peer_.hostname << " " << why
               << (interval ? ": its operations go to the other lanes while it is reconnected"
                            : ": its operations go to the other lanes");
  if (!interval) return;
  rc.delay_ns = interval;
  rc.next_ns = ucs::monotonic_ns() + interval;
  worker_->watch_reconnect(this);
}

unsigned EndpointImpl::progress_reconnect(uint64_t now) {
  const uint64_t interval = interval_ns(worker_->context());
  if (closed_) {  // only fit to be destroyed: nothing to connect for
    worker_->unwatch_reconnect(this);
    return 0;
  }
  unsigned events = 0;
  for (size_t lane = 0; lane < runtime_.size(); ++lane) {
    if (!is_error(runtime_[lane].status)) continue;
    LaneReconnect& rc = reconnect_[lane];
    if (!rc.attempt) {
      if (now < rc.next_ns) continue;
      Result<std::unique_ptr<uct::Endpoint>> ep = lane_connect(lane);
      if (ep.ok()) rc.attempt = std::move(*ep);
    }
    const Status s = rc.attempt ? rc.attempt->connect_status() : Status::Unreachable;
    if (s == Status::InProgress) continue;
    if (is_error(s)) {
      rc.attempt.reset();
      ++rc.attempts;
      rc.delay_ns = std::min(rc.delay_ns * 2, kMaxBackoff * interval);
      rc.next_ns = now + rc.delay_ns;
      MC_LOG(debug) << "ucp: lane " << lane << " to " << peer_.hostname << ": reconnection "
                    << rc.attempts << " failed (" << ucs::status_string(s) << "), next in "
                    << rc.delay_ns / 1000000 << " ms";
      continue;
    }
    // Connected. The old endpoint's work already failed over (its slices
    // are on other lanes); destroying it while the lane still reads failed
    // keeps anything it completes now from being re-issued here.
    std::unique_ptr<uct::Endpoint> old = std::move(uct_eps_[lane]);
    if (old) worker_->unmap_uct_ep(old.get());
    old.reset();
    uct_eps_[lane] = std::move(rc.attempt);
    runtime_[lane].ep = uct_eps_[lane].get();
    worker_->map_uct_ep(runtime_[lane].ep, this, lane);
    runtime_[lane].status = Status::Ok;
    MC_LOG(warn) << "ucp: lane " << lane << " (" << selection_.candidate_of(lane).name << ") to "
                 << peer_.hostname << " reconnected";
    rc = LaneReconnect{};
    ++events;
  }
  const bool still_down =
      std::any_of(runtime_.begin(), runtime_.end(),
                  [](const proto::LaneRuntime& r) { return is_error(r.status); });
  if (!still_down || !interval) worker_->unwatch_reconnect(this);
  return events;
}

void EndpointImpl::print_lane_state(std::ostream& os) const {
  const uint64_t now = ucs::monotonic_ns();
  for (size_t lane = 0; lane < runtime_.size(); ++lane) {
    if (!is_error(runtime_[lane].status)) continue;
    const LaneReconnect& rc = reconnect_[lane];
    os << "  lane " << lane << " (" << selection_.candidate_of(lane).name
       << ") is down: " << rc.why;
    if (rc.attempt) {
      os << "; reconnecting";
    } else if (rc.next_ns) {
      os << "; next reconnection in " << (rc.next_ns > now ? (rc.next_ns - now) / 1000000 : 0)
         << " ms (" << rc.attempts << " failed so far)";
    } else {
      os << "; not reconnected (MC_LANE_RECONNECT_INTERVAL=off)";
    }
    os << "\n";
  }
}

}  // namespace mc::ucp
