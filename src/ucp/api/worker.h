// SPDX-License-Identifier: Apache-2.0
// Worker: the progress engine. One iface per usable resource of its context,
// an event loop for the transports' background service, its packed address,
// active-message handlers, and the requests in flight. What an application
// sees of it: the worker itself is core/worker.h's WorkerImpl, which this
// header does not include (nor anything of core/, proto/ or wireup/).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ucp/api/context.h"
#include "ucp/api/file.h"
#include "ucp/api/request.h"
#include "ucs/sys/visibility.h"

namespace mc::ucp {

class Endpoint;

/// Receives an active message: `length` bytes at `data`, valid only during
/// the call. Runs inside Worker::progress().
using AmCallback = std::function<void(const void* data, size_t length)>;

/// Where a worker's background work runs: its transports' sockets (tcp)
/// and their timers.
enum class AsyncMode : uint8_t {
  /// On a thread of the worker: a peer's operations on this process's
  /// memory complete while nobody calls progress(), at the cost of a thread
  /// hop per message (tcp 8-byte latency about 3x that of Progress).
  Thread,
  /// In the caller's progress() and wait(): no thread hop; nothing moves
  /// over tcp while nobody progresses the worker (as in UCX).
  Progress,
};

/// Optional inputs of Worker::create().
struct WorkerParams {
  /// Overrides MC_THREAD_MODE for this worker.
  std::optional<ThreadMode> thread_mode;
  /// Default Thread.
  AsyncMode async_mode = AsyncMode::Thread;
  /// NUMA node of the memory this worker's endpoints move, for the choice
  /// of rails; default: the node of the CPU that creates the worker (from
  /// the topology), -1 when unknown.
  std::optional<int> numa_node;
};

/// Thread safety, by thread mode (WorkerParams, MC_THREAD_MODE):
/// - Single: one thread at a time drives the worker, its endpoints and
///   requests (progress, operations, ep_create, wait); no locking.
/// - Multi: any thread may call the methods of the worker, of its endpoints
///   and of its requests; a recursive worker mutex serialises them (so a
///   callback inside progress() may call them too). wait() sleeps without
///   the mutex; signal() and the read-only accessors never take it.
/// Either way the worker must outlive its endpoints and requests' use, and
/// the context must outlive the worker.
class MC_API Worker {
 public:
  /// Opens an iface on every enabled resource of `context` (a failure is
  /// logged and that resource is marked unusable with the reason) and starts
  /// the event loop thread. Returns NoDevice when no iface opened, IoError
  /// when the event loop or the blocking-progress fds cannot be made.
  static Result<std::unique_ptr<Worker>> create(Context& context);
  /// As above, with per-worker settings.
  static Result<std::unique_ptr<Worker>> create(Context& context, const WorkerParams& params);
  virtual ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  Context& context() const;
  /// Random identity of this worker, carried in its address.
  uint64_t uuid() const;
  /// The packed address of every open iface.
  std::vector<uint8_t> address() const;
  /// Progresses every iface, then every request (posting, deadlines).
  /// Returns the number of events handled.
  unsigned progress();

  /// NUMA node the rails of new endpoints are chosen near; -1: no preference.
  int numa_node() const;
  /// The thread mode in force.
  ThreadMode thread_mode() const;
  /// Blocking progress: an epoll fd that becomes readable when an iface with
  /// an event fd (kCapEventFd: tcp) has work for progress() after arm(), or
  /// when signal() is called. Ifaces without one (sm, self) never make it
  /// readable: wait() polls them every MC_POLL_INTERVAL instead. Owned by
  /// the worker.
  int event_fd() const;
  /// Whether every iface has an event fd, so that a sleep on event_fd()
  /// misses nothing of theirs: progress() is then needed only when it is
  /// readable, and for requests' deadlines. False when one must be polled
  /// (sm, self; or one whose arm() failed).
  bool event_driven() const;
  /// Arms every event fd. Busy when there is work now (call progress() and
  /// arm again); Ok when a sleep on event_fd() may begin.
  Status arm();
  /// Sleeps until progress() may have work: arm() found some, an event fd
  /// fired, signal() was called, or (while an iface has no event fd or a
  /// request is in progress) MC_POLL_INTERVAL passed; returns Ok then.
  /// Returns Timeout when `timeout` passed first. Never holds the worker
  /// mutex while asleep. The caller progresses after it returns.
  Status wait(ucs::config::Duration timeout = ucs::config::Duration::max());
  /// Wakes a wait() in another thread. Any thread, any mode; async-signal-safe.
  void signal();
  /// For a caller that sleeps on event_fd() itself (arm(), then its own
  /// poll with other fds): call it once the sleep ended, before progress().
  /// It takes what signal() left on event_fd() and has the next progress()
  /// serve every iface, however quiet it was (wait() does both).
  void woken();
  /// The worker mutex in multi mode (an empty lock in single mode): for
  /// several calls that must not interleave with other threads'.
  std::unique_lock<std::recursive_mutex> lock() const;

  /// Sets the handler of user active-message id `id`; an empty callback
  /// removes it. Messages for an id without a handler are dropped with a
  /// warning.
  void set_am_handler(uint16_t id, AmCallback callback);

  /// Creates an endpoint to the worker whose packed address is `address`.
  /// InvalidParam for an address that does not unpack (logged with why),
  /// Unreachable when no lane reaches it (logged with the rejections).
  Result<std::unique_ptr<Endpoint>> ep_create(std::span<const uint8_t> address);

  /// Completes once every request started before it has completed and
  /// every iface has flushed. Fails (with the lane's error) when a lane of
  /// any endpoint failed holding data that had completed locally (a short or
  /// bcopy put, an eager active message) since the previous worker flush:
  /// that data may never have arrived. Each such loss fails one worker
  /// flush, as it fails one flush of its endpoint.
  Result<std::shared_ptr<Request>> flush(const RequestParams& params = {});

  /// The memory type of [buffer, +length) as the context's memory domains
  /// that detect memory types tell it (their range caches); Host when none
  /// claims it.
  uct::MemType detect_mem_type(const void* buffer, size_t length) const;
  /// The resources (into Context::resources()) whose ifaces opened, in
  /// resource order.
  std::vector<size_t> iface_resources() const;

  /// Opens `path` for file_io() with the worker's file transport (nvmeof,
  /// which the first call opens and progress() progresses from then on):
  /// read-write when `writable`, else read-only. Unsupported when the
  /// transport is not loaded, the open's error otherwise (both logged,
  /// with the path).
  Result<std::unique_ptr<File>> file_open(const std::string& path, bool writable);
  /// How file_io() moves memory of type `mem` (opening the file transport
  /// if needed). Unsupported when the transport is not loaded (logged at
  /// the first call), or, not logged, when the memory cannot reach files:
  /// GPU memory that the transport does not access (no cuFile) and no
  /// enabled memory-type transport copies (cuda_copy, MC_TLS); other
  /// errors of setting up the staging (logged).
  Result<FileRoute> file_route(uct::MemType mem);
  /// Starts `io`. Its request completes once every run is written or read
  /// and nothing of it is in flight, with Ok or the first error (an I/O
  /// error is logged with the file and the errno). InvalidParam, logged
  /// with why, for runs outside their files, a file of another worker, a
  /// write to a file opened read-only, or staged runs whose buffers do not
  /// follow each other;
  /// file_route()'s errors for memory that cannot reach files. A deadline
  /// (params.timeout, default MC_TRANSFER_TIMEOUT) stops posting; what is
  /// posted still completes before the request does.
  Result<std::shared_ptr<Request>> file_io(const FileIo& io, const RequestParams& params = {});

 protected:
  Worker() = default;  ///< only WorkerImpl derives
};

}  // namespace mc::ucp
