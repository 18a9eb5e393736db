// SPDX-License-Identifier: Apache-2.0
// Process start times, liveness and pidfd watches.
#include "uct/sm/sm_proc.h"

#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>

namespace mc::uct::sm {

namespace {

// Reads /proc/<pid>/stat: state (field 3) and starttime (field 22). The
// command name (field 2) may hold spaces and parentheses, so fields are
// counted from the last ')'.
bool read_stat(pid_t pid, char* state, uint64_t* start) {
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/%d/stat", static_cast<int>(pid));
  FILE* f = std::fopen(path, "re");
  if (!f) return false;
  char buf[1024];
  const size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
  std::fclose(f);
  buf[n] = '\0';
  const char* p = std::strrchr(buf, ')');
  if (!p) return false;
  ++p;
  unsigned long long value = 0;
  char st = 0;
  // After ')': state ppid pgrp session tty_nr tpgid flags minflt cminflt
  // majflt cmajflt utime stime cutime cstime priority nice num_threads
  // itrealvalue starttime.
  if (std::sscanf(p,
                  " %c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d "
                  "%*d %*d %llu",
                  &st, &value) != 2) {
    return false;
  }
  *state = st;
  *start = value;
  return true;
}

}  // namespace

uint64_t process_start_time(pid_t pid) {
  char state = 0;
  uint64_t start = 0;
  if (!read_stat(pid, &state, &start)) return 0;
  if (state == 'Z' || state == 'X' || state == 'x') return 0;
  return start;
}

uint64_t own_start_time() {
  // Keyed by pid: a forked child must not report its parent's start time.
  static std::mutex lock;
  static pid_t cached_pid = 0;
  static uint64_t cached = 0;
  const pid_t pid = getpid();
  std::lock_guard guard(lock);
  if (cached_pid != pid) {
    cached = process_start_time(pid);
    cached_pid = pid;
  }
  return cached;
}

uint64_t pid_ns_inode() {
  struct stat st {};
  return stat("/proc/self/ns/pid", &st) == 0 ? static_cast<uint64_t>(st.st_ino) : 0;
}

bool process_alive(pid_t pid, uint64_t start_time) {
  if (pid <= 0) return false;
  if (kill(pid, 0) != 0 && errno == ESRCH) return false;
  char state = 0;
  uint64_t start = 0;
  if (!read_stat(pid, &state, &start)) {
    // No /proc (or no access): kill() said the pid exists.
    return true;
  }
  if (state == 'Z' || state == 'X' || state == 'x') return false;
  return start_time == 0 || start == start_time;
}

PeerWatch::PeerWatch(pid_t pid, uint64_t start_time) : pid_(pid), start_time_(start_time) {
#ifdef SYS_pidfd_open
  pidfd_ = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
#endif
  // The pidfd may name a newer process that reused the pid: check the start
  // time once, after opening, so the fd is known to watch the right one.
  if (!process_alive(pid, start_time)) dead_ = true;
}

PeerWatch::~PeerWatch() {
  if (pidfd_ >= 0) close(pidfd_);
}

bool PeerWatch::alive() {
  if (dead_) return false;
  if (pidfd_ >= 0) {
    pollfd p{pidfd_, POLLIN, 0};
    if (poll(&p, 1, 0) == 1) dead_ = true;
  } else if (!process_alive(pid_, start_time_)) {
    dead_ = true;
  }
  return !dead_;
}

}  // namespace mc::uct::sm
