// SPDX-License-Identifier: Apache-2.0
// Process identity and liveness for sm: start times (to tell a pid's reuse),
// the pid namespace, and a cheap watch on a peer process (pidfd).
#pragma once

#include <sys/types.h>

#include <cstdint>

namespace mc::uct::sm {

/// Start time of `pid` in clock ticks since boot (field 22 of
/// /proc/<pid>/stat); 0 when the process does not exist, is a zombie, or
/// cannot be read.
uint64_t process_start_time(pid_t pid);

/// This process's start time (recomputed after a fork).
uint64_t own_start_time();

/// Inode of /proc/self/ns/pid (0 when unreadable): pids mean the same thing
/// only inside one pid namespace.
uint64_t pid_ns_inode();

/// Whether `pid` runs and, when `start_time` is not 0, is still the process
/// that started then (not a reuse of its pid). A zombie is dead.
bool process_alive(pid_t pid, uint64_t start_time);

/// Watches one peer process: alive() is a non-blocking poll of a pidfd
/// (readable once the process exits), falling back to /proc where pidfds
/// are unavailable. Not thread-safe.
class PeerWatch {
 public:
  PeerWatch(pid_t pid, uint64_t start_time);
  ~PeerWatch();
  PeerWatch(const PeerWatch&) = delete;
  PeerWatch& operator=(const PeerWatch&) = delete;

  pid_t pid() const { return pid_; }
  uint64_t start_time() const { return start_time_; }

  /// False once the process has exited; stays false.
  bool alive();

 private:
  pid_t pid_;
  uint64_t start_time_;
  int pidfd_ = -1;
  bool dead_ = false;
};

}  // namespace mc::uct::sm
