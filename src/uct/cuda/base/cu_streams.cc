// SPDX-License-Identifier: Apache-2.0
// Streams, events and their progress.
#include "uct/cuda/base/cu_streams.h"

#include "ucs/log/log.h"

namespace mc::uct::cuda {

using ucs::Status;

CuStreams::~CuStreams() {
  if (in_flight_ > 0) {
    MC_LOG(warn) << name_ << ": closed with " << in_flight_
                 << " copies in flight; waiting for them, their completions are dropped";
  }
  for (auto& [device, d] : devices_) {
    CtxScope scope(driver_, device);
    for (StreamQueue& q : d.queues) {
      (void)driver_.stream_synchronize(q.stream);
      for (Op& op : q.ops) (void)driver_.event_destroy(op.event);
      (void)driver_.stream_destroy(q.stream);
    }
    for (cu::Event e : d.free_events) (void)driver_.event_destroy(e);
  }
}

ucs::Result<CuStreams::DeviceStreams*> CuStreams::streams_of(int device) {
  auto it = devices_.find(device);
  if (it != devices_.end()) return &it->second;
  DeviceStreams d;
  for (size_t i = 0; i < streams_; ++i) {
    StreamQueue q;
    const cu::Result e = driver_.stream_create(&q.stream, cu::kStreamNonBlocking);
    if (e != cu::kSuccess) {
      MC_LOG(error) << name_ << ": cuStreamCreate on device " << device
                    << " failed: " << driver_.error_string(e);
      for (StreamQueue& made : d.queues) (void)driver_.stream_destroy(made.stream);
      return Status::NoResource;
    }
    d.queues.push_back(std::move(q));
  }
  return &devices_.emplace(device, std::move(d)).first->second;
}

ucs::Result<cu::Event> CuStreams::event_get(DeviceStreams& d) {
  if (!d.free_events.empty()) {
    cu::Event e = d.free_events.back();
    d.free_events.pop_back();
    return e;
  }
  cu::Event e = nullptr;
  const cu::Result rc = driver_.event_create(&e, cu::kEventDisableTiming);
  if (rc != cu::kSuccess) {
    MC_LOG(error) << name_ << ": cuEventCreate failed: " << driver_.error_string(rc);
    return Status::NoResource;
  }
  return e;
}

Status CuStreams::post(const std::vector<Piece>& pieces, int device, Done done) {
  if (!has_room()) return Status::NoResource;
  CtxScope scope(driver_, device);
  if (!scope.ok()) {
    MC_LOG(error) << name_ << ": cannot make device " << device
                  << "'s context current: " << driver_.error_string(scope.result());
    return Status::NoDevice;
  }
  MC_ASSIGN_OR_RETURN(DeviceStreams * d, streams_of(device));
  MC_ASSIGN_OR_RETURN(cu::Event event, event_get(*d));
  StreamQueue& q = d->queues[d->next++ % d->queues.size()];
  Status status = Status::Ok;
  for (const Piece& p : pieces) {
    if (p.length == 0) continue;
    const cu::Result e = driver_.memcpy_async(reinterpret_cast<cu::DevicePtr>(p.dst),
                                              reinterpret_cast<cu::DevicePtr>(p.src), p.length,
                                              q.stream);
    if (e != cu::kSuccess) {
      MC_LOG(error) << name_ << ": cuMemcpyAsync of " << p.length << " bytes " << p.src << " -> "
                    << p.dst << " failed: " << driver_.error_string(e);
      status = Status::IoError;
      break;
    }
  }
  const cu::Result rec = driver_.event_record(event, q.stream);
  if (rec != cu::kSuccess) {
    MC_LOG(error) << name_ << ": cuEventRecord failed: " << driver_.error_string(rec);
    // Nothing to poll: wait here so the memory is not reused while copying.
    (void)driver_.stream_synchronize(q.stream);
    d->free_events.push_back(event);
    return Status::IoError;
  }
  if (status != Status::Ok) {
    done = [done = std::move(done), status](Status) { done(status); };
  }
  q.ops.push_back(Op{event, device, std::move(done)});
  ++in_flight_;
  return Status::InProgress;
}

unsigned CuStreams::progress_queue(DeviceStreams& d, StreamQueue& q) {
  unsigned events = 0;
  while (!q.ops.empty()) {
    const cu::Result e = driver_.event_query(q.ops.front().event);
    if (e == cu::kErrorNotReady) break;
    Op op = std::move(q.ops.front());
    q.ops.pop_front();
    Status s = Status::Ok;
    if (e != cu::kSuccess) {
      MC_LOG(error) << name_ << ": a copy on device " << op.device
                    << " failed: " << driver_.error_string(e);
      s = Status::IoError;
    }
    d.free_events.push_back(op.event);
    --in_flight_;
    op.done(s);  // may post more copies on this queue
    ++events;
  }
  return events;
}

unsigned CuStreams::progress() {
  unsigned events = 0;
  for (auto& [device, d] : devices_) {
    for (StreamQueue& q : d.queues) events += progress_queue(d, q);
  }
  return events;
}

}  // namespace mc::uct::cuda
