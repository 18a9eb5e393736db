// SPDX-License-Identifier: Apache-2.0
// This process's open file descriptors and threads, as /proc lists them, for
// tests that check nothing is left behind.
#pragma once

#include <dirent.h>

#include <chrono>
#include <cstddef>
#include <thread>

namespace mc::test {

/// Entries of a /proc directory, "." and ".." included.
inline size_t count_dir(const char* path) {
  DIR* dir = opendir(path);
  if (dir == nullptr) return 0;
  size_t n = 0;
  while (readdir(dir) != nullptr) ++n;
  closedir(dir);
  return n;
}

struct ProcCounts {
  size_t fds = 0;
  size_t threads = 0;
  bool operator==(const ProcCounts&) const = default;
};

inline ProcCounts proc_counts() {
  return {count_dir("/proc/self/fd"), count_dir("/proc/self/task")};
}

/// The counts as they settle: the least of each seen over `window`, for a
/// baseline taken just after threads were joined (one that is not reaped
/// yet is gone from the count within microseconds). Nothing may start a
/// thread or open an fd meanwhile.
inline ProcCounts quiet_proc_counts(
    std::chrono::milliseconds window = std::chrono::milliseconds(20)) {
  const auto end = std::chrono::steady_clock::now() + window;
  ProcCounts least = proc_counts();
  while (std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    const ProcCounts now = proc_counts();
    if (now.fds < least.fds) least.fds = now.fds;
    if (now.threads < least.threads) least.threads = now.threads;
  }
  return least;
}

/// The counts once they equal `want`, or as they are after `limit`. A
/// joined thread stays in /proc/self/task until the kernel has reaped it,
/// a moment after pthread_join() returned, so a count read at once can be
/// one too many; waiting bounds that and still fails on a leak.
inline ProcCounts settled_proc_counts(ProcCounts want,
                                      std::chrono::milliseconds limit = std::chrono::seconds(5)) {
  const auto end = std::chrono::steady_clock::now() + limit;
  ProcCounts now = proc_counts();
  while (!(now == want) && std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    now = proc_counts();
  }
  return now;
}

}  // namespace mc::test
