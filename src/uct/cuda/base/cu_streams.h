// SPDX-License-Identifier: Apache-2.0
// Asynchronous copies on a few CUDA streams per device, each operation
// followed by an event that progress() polls: what cuda_copy and cuda_ipc
// share. Single-threaded (the iface's progress context).
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <vector>

#include "ucs/status/status.h"
#include "uct/cuda/base/cu_driver.h"

namespace mc::uct::cuda {

class CuStreams {
 public:
  /// One contiguous copy (unified addressing: host or device pointers).
  struct Piece {
    void* dst;
    const void* src;
    size_t length;
  };
  using Done = std::function<void(ucs::Status)>;

  /// `streams` streams per device (made on first use), at most
  /// `max_outstanding` operations in flight; `name` prefixes log lines.
  CuStreams(const CuDriver& driver, size_t streams, size_t max_outstanding, std::string name)
      : driver_(driver), streams_(streams), max_outstanding_(max_outstanding), name_(std::move(name)) {}
  /// Waits for the copies still in flight (their completions are dropped).
  ~CuStreams();
  CuStreams(const CuStreams&) = delete;
  CuStreams& operator=(const CuStreams&) = delete;

  /// Issues `pieces` in order on one stream of `device` in its primary
  /// context and records an event; `done` runs from progress() when the
  /// event completes (IoError, logged, when a copy failed). InProgress, or
  /// NoResource when max_outstanding operations are in flight, NoDevice or
  /// IoError (logged) when the driver refuses.
  ucs::Status post(const std::vector<Piece>& pieces, int device, Done done);
  /// Completes finished operations in stream order; the number completed.
  unsigned progress();

  bool has_room() const { return in_flight_ < max_outstanding_; }
  size_t in_flight() const { return in_flight_; }
  const CuDriver& driver() const { return driver_; }

 private:
  struct Op {
    cu::Event event;
    int device;
    Done done;
  };
  struct StreamQueue {
    cu::Stream stream = nullptr;
    std::deque<Op> ops;  // in stream order: events complete in this order
  };
  struct DeviceStreams {
    std::vector<StreamQueue> queues;
    size_t next = 0;
    std::vector<cu::Event> free_events;
  };

  ucs::Result<DeviceStreams*> streams_of(int device);
  ucs::Result<cu::Event> event_get(DeviceStreams& d);
  unsigned progress_queue(DeviceStreams& d, StreamQueue& q);

  const CuDriver& driver_;
  size_t streams_;
  size_t max_outstanding_;
  std::string name_;
  std::map<int, DeviceStreams> devices_;
  size_t in_flight_ = 0;
};

}  // namespace mc::uct::cuda
