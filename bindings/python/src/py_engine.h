// SPDX-License-Identifier: Apache-2.0
// mc.TransferEngine and what it makes (Registration, Segment, Request,
// Batch) over mc::TransferEngine. Every call that may block runs with the
// GIL released.
//
// Lifetime: every object holds the engine's EngineState; close() (or the
// last reference) stops the engine, and later calls raise. A registration
// keeps its memory (the object and its buffer export) until it is
// unregistered or the engine closes; a batch holds the registrations its
// requests use until it is freed, and unregistering one before raises
// BusyError: mc may touch registered memory until the batch ends.
//
// Locking: `mu` is taken shared by every engine call and exclusively by
// close(), always with the GIL released; nothing holding it takes the GIL.
#pragma once

#include <pybind11/pybind11.h>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <utility>
#include <vector>

#include "mc/transfer_engine.h"
#include "py_error.h"
#include "py_memory.h"

namespace mc::py {

/// A registered buffer. Destroy with the GIL held (its Memory).
struct RegState {
  Memory mem;
  std::string location;
  bool remote_accessible = true;
  std::atomic<int> batches{0};  ///< unfreed batches whose requests use it
};

struct EngineState {
  std::shared_mutex mu;                    ///< see the file comment
  std::unique_ptr<TransferEngine> engine;  ///< null once closed
  std::string segment_name;
  bool p2p = false;

  std::mutex regs_mu;                                   ///< guards regs
  std::map<uintptr_t, std::shared_ptr<RegState>> regs;  ///< by address

  /// Runs f(engine) with the GIL released under the shared lock; raises
  /// InvalidParamError naming `what` once the engine is closed.
  template <typename F>
  auto call(const std::string& what, F&& f) {
    pybind11::gil_scoped_release nogil;
    std::shared_lock lock(mu);
    if (!engine) throw StatusError{kInvalidParam, what + ": the engine is closed"};
    return f(*engine);
  }

  /// The registration holding [addr, addr + len), or null.
  std::shared_ptr<RegState> find(uintptr_t addr, size_t len);
};

/// A registration as Python sees it.
struct Registration {
  std::shared_ptr<EngineState> engine;
  std::shared_ptr<RegState> reg;
};

/// An opened segment.
struct Segment {
  std::shared_ptr<EngineState> engine;
  SegmentID id;
  std::string name;
};

/// One transfer: local memory (a registration and an offset, or an address
/// in one), a segment, the remote address, a length.
struct Request {
  TransferRequest::OpCode op;
  uintptr_t local;
  size_t length;
  SegmentID segment;
  uint64_t remote;
  std::shared_ptr<RegState> reg;  ///< when made from a Registration
};

/// A batch of up to `capacity` tasks.
class Batch {
 public:
  Batch(std::shared_ptr<EngineState> engine, BatchID id, size_t capacity)
      : engine_(std::move(engine)), id_(id), capacity_(capacity) {}
  /// Waits for unended tasks, then frees the batch (a batch never freed).
  ~Batch();

  void submit(const std::vector<Request>& requests, const std::optional<pybind11::tuple>& notify);
  std::vector<TransferStatus> status();
  /// The statuses once every task ended; raises TimeoutError past `timeout`
  /// seconds, TransferError when a task did not complete.
  std::vector<TransferStatus> wait(std::optional<double> timeout);
  int notify_status();
  /// Waits until the target took the batch's notification; raises the
  /// reason it was not (Canceled: a task did not complete), TimeoutError
  /// past `timeout` seconds.
  void wait_notify(std::optional<double> timeout);
  void free();
  /// Waits, with the GIL released, until every task ended or `deadline`:
  /// 0 (`st` the statuses), kTimeout, or a negative status.
  int wait_ended(std::optional<std::chrono::steady_clock::time_point> deadline,
                 std::vector<TransferStatus>& st);
  size_t capacity() const { return capacity_; }
  size_t submitted() const { return submitted_; }
  BatchID id() const { return id_; }

 private:
  void release_regs();

  std::shared_ptr<EngineState> engine_;
  BatchID id_;
  size_t capacity_;
  size_t submitted_ = 0;
  bool freed_ = false;
  std::vector<std::shared_ptr<RegState>> regs_;
};

/// Unregisters `reg` from the engine: NoElemError when it is not registered
/// there, BusyError while an unfreed batch uses it.
void unregister_memory(const std::shared_ptr<EngineState>& st,
                       const std::shared_ptr<RegState>& reg);

/// The bytes of a Python str or bytes.
std::string bytes_of(pybind11::handle obj, const char* what);

void bind_engine(pybind11::module_& m);
void bind_batch(pybind11::module_& m);

}  // namespace mc::py
