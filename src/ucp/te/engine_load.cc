// SPDX-License-Identifier: Apache-2.0
// TransferEngine::Impl: connecting ahead of the first transfer (warmup) and
// the local devices' load (Mooncake's getNicLoadStats).
//
// A device's load comes from the counters UCP keeps per lane of an endpoint
// (LaneRuntime::rma_bytes, rma_done_bytes): bytes posted minus bytes
// completed are in flight on it now; the bytes completed in each 10 ms
// window of the progress thread feed the bandwidth average. A lane counts
// for the local resource it runs on, summed over every endpoint (retired
// ones too, while they drain).
#include <chrono>
#include <memory>

#include "ucp/te/engine.h"
#include "ucs/log/log.h"
#include "ucs/sys/sys.h"

namespace mc {

namespace {

constexpr uint64_t kLoadWindowNs = 10'000'000;
constexpr double kLoadWeight = 1.0 / 8;

}  // namespace

std::vector<uint64_t> TransferEngine::Impl::lane_load_locked(std::vector<uint64_t>* done) const {
  const size_t n = context_->resources().size();
  std::vector<uint64_t> inflight(n, 0);
  if (done) done->assign(n, 0);
  std::vector<ucp::LaneCounters> lanes;  // one buffer for every endpoint
  endpoints_->for_each([&](te::EpEntry& e) {
    if (!e.ep) return;
    e.ep->lane_counters(&lanes);
    if (done) e.done_sampled.resize(lanes.size(), 0);
    for (const ucp::LaneCounters& l : lanes) {
      if (l.local_resource >= n) continue;
      inflight[l.local_resource] += l.rma_bytes - l.rma_done_bytes;
      if (done) {
        (*done)[l.local_resource] += l.rma_done_bytes - e.done_sampled[l.lane];
        e.done_sampled[l.lane] = l.rma_done_bytes;
      }
    }
  });
  return inflight;
}

void TransferEngine::Impl::sample_load_locked(uint64_t now) {
  if (now - load_sampled_ns_ < kLoadWindowNs) return;
  const double seconds = static_cast<double>(now - load_sampled_ns_) / 1e9;
  load_sampled_ns_ = now;
  // Nothing posted since a window that saw nothing: no lane has moved, and
  // the endpoints (up to MC_MAX_EP_PER_CTX) need no visit.
  if (load_posts_ == load_posts_seen_ && inflight_ == 0 && !load_busy_) return;
  load_posts_seen_ = load_posts_;
  std::vector<uint64_t> done;
  const std::vector<uint64_t> inflight = lane_load_locked(&done);
  load_ewma_.resize(inflight.size(), {0.0, false});
  load_busy_ = inflight_ > 0;
  for (size_t d = 0; d < inflight.size(); ++d) {
    if (inflight[d] == 0 && done[d] == 0) continue;  // idle: the average stays
    load_busy_ = true;
    const double rate = static_cast<double>(done[d]) / seconds;
    auto& [ewma, seen] = load_ewma_[d];
    ewma = seen ? ewma + kLoadWeight * (rate - ewma) : rate;
    seen = true;
  }
}

int TransferEngine::Impl::nic_load(std::vector<NicLoadStat>& out) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (!worker_ || !endpoints_) {
    MC_LOG(error) << "transfer engine: getNicLoadStats: engine not initialised";
    return -1;
  }
  const std::vector<uint64_t> inflight = lane_load_locked(nullptr);
  const std::vector<ucp::ResourceInfo>& resources = context_->resources();
  out.clear();
  for (size_t d = 0; d < resources.size(); ++d) {
    const double ewma = d < load_ewma_.size() ? load_ewma_[d].first : 0.0;
    out.push_back({resources[d].name(), inflight[d], ewma});
  }
  return 0;
}

int TransferEngine::Impl::warmup(SegmentHandle id) {
  std::unique_lock<std::mutex> lock(mu_);
  auto it = segments_.find(id);
  if (!worker_ || it == segments_.end()) {
    MC_LOG(error) << "transfer engine: warmupSegment: "
                  << (worker_ ? "unknown segment handle " + std::to_string(id)
                              : std::string("engine not initialised"));
    return static_cast<int>(Status::NoElem);
  }
  if (it->second->file) return 0;             // its files were opened by openSegment
  const std::string name = it->second->name;  // `it` may go while the lock is released
  Result<te::EndpointStore::Entry> entry = endpoint_locked(id);
  if (!entry.ok()) return static_cast<int>(entry.status());
  // The flush completes once every lane has answered: each connection is up.
  struct Wait {
    bool done = false;
    Status status = Status::InProgress;
  };
  auto wait = std::make_shared<Wait>();
  ucp::RequestParams params;
  params.timeout = config_.handshake_timeout;
  params.callback = [this, wait](Status s) {
    wait->status = s;
    wait->done = true;
    warmup_cv_.notify_all();
  };
  te::EndpointStore::Entry e = *entry;
  e->inflight++;  // not reaped while it flushes
  Result<std::shared_ptr<ucp::Request>> flush = e->ep->flush(params);
  if (flush.ok()) {
    wake_progress();
    warmup_cv_.wait(lock, [&] { return wait->done || stop_; });
  }
  e->inflight--;
  const Status s = !flush.ok() ? flush.status() : wait->done ? wait->status : Status::Canceled;
  if (s != Status::Ok) {
    MC_LOG(error) << "transfer engine: warmupSegment: segment '" << name << "': " << s;
    e->failed = true;  // the next transfer opens a fresh endpoint
    return static_cast<int>(s);
  }
  MC_LOG(debug) << "transfer engine: segment '" << name << "' warmed up ("
                << e->ep->lane_info().size() << " lanes)";
  return 0;
}

}  // namespace mc
