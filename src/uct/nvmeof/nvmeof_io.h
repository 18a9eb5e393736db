// SPDX-License-Identifier: Apache-2.0
// File I/O engines of the nvmeof transport: io_uring with a bounded queue
// depth, and a preadv/pwritev fallback. Both complete requests in progress().
#pragma once

#include <sys/uio.h>

#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ucs/status/status.h"

namespace mc::uct::nvmeof {

using ucs::Result;
using ucs::Status;

/// One read or write of a file region into or from memory.
struct IoRequest {
  int fd = -1;
  bool write = false;
  uint64_t offset = 0;     ///< file offset of the first byte
  std::vector<iovec> iov;  ///< memory side; trimmed as bytes complete
  size_t length = 0;       ///< total bytes asked for
  size_t done_bytes = 0;   ///< bytes completed so far
  std::string path;        ///< for error messages
  /// Called once from progress(): Ok, or IoError after the cause was logged.
  std::function<void(Status)> done;
};

/// Thread safety: one thread (the iface's) submits and progresses.
class IoEngine {
 public:
  /// io_uring with `queue_depth` entries when `use_uring`; when io_uring
  /// cannot be set up, the reason is logged and preadv/pwritev is used.
  static std::unique_ptr<IoEngine> create(unsigned queue_depth, bool use_uring);
  virtual ~IoEngine() = default;

  /// "io_uring" or "preadv/pwritev".
  virtual const char* name() const = 0;
  /// Takes `req`; it starts at once, or when fewer than queue_depth are in flight.
  virtual void submit(std::unique_ptr<IoRequest> req) = 0;
  /// Completes what finished and starts what waits; returns completions.
  virtual unsigned progress() = 0;

  unsigned queue_depth() const { return queue_depth_; }
  /// Requests handed to the kernel and not completed yet.
  size_t in_flight() const { return in_flight_; }
  /// The most requests ever in flight at once (never above queue_depth).
  size_t max_in_flight() const { return max_in_flight_; }
  /// Requests waiting for a free slot.
  size_t waiting() const { return backlog_.size(); }

 protected:
  explicit IoEngine(unsigned queue_depth) : queue_depth_(queue_depth) {}

  /// Accounts for `n` bytes of `req` done: true when it is complete. A
  /// return of zero bytes, or an error (`n` < 0 is -errno), ends it with
  /// IoError after logging why.
  static bool account(IoRequest* req, long n, bool* failed);
  void started() {
    ++in_flight_;
    if (in_flight_ > max_in_flight_) max_in_flight_ = in_flight_;
  }

  unsigned queue_depth_;
  size_t in_flight_ = 0;
  size_t max_in_flight_ = 0;
  std::deque<std::unique_ptr<IoRequest>> backlog_;
};

}  // namespace mc::uct::nvmeof
