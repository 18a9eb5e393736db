// SPDX-License-Identifier: Apache-2.0
// FdExhaustion: this process out of file descriptors for a while, so that
// accept() and socket() fail with EMFILE; and the CPU time the process used,
// to tell a loop that waits from one that spins.
#pragma once

#include <dirent.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <vector>

namespace mc::test {

/// Lowers the soft RLIMIT_NOFILE to a little above the highest descriptor
/// open now and fills the table up to it; release() (or the destructor)
/// closes what it took and puts the limit back. Descriptors a test needs
/// while exhausted (a client socket) are made before.
class FdExhaustion {
 public:
  FdExhaustion() {
    if (getrlimit(RLIMIT_NOFILE, &saved_) != 0) return;
    rlimit low = saved_;
    low.rlim_cur = static_cast<rlim_t>(highest_fd() + 17);
    if (low.rlim_cur > saved_.rlim_cur || setrlimit(RLIMIT_NOFILE, &low) != 0) return;
    lowered_ = true;
    for (;;) {
      const int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
      if (fd < 0) {
        ok_ = errno == EMFILE;
        break;
      }
      fds_.push_back(fd);
    }
  }
  ~FdExhaustion() { release(); }
  FdExhaustion(const FdExhaustion&) = delete;
  FdExhaustion& operator=(const FdExhaustion&) = delete;

  /// True when the next descriptor would fail with EMFILE.
  bool ok() const { return ok_; }

  void release() {
    for (int fd : fds_) close(fd);
    fds_.clear();
    if (lowered_) setrlimit(RLIMIT_NOFILE, &saved_);
    lowered_ = false;
  }

 private:
  static int highest_fd() {
    int top = 2;
    DIR* dir = opendir("/proc/self/fd");
    if (!dir) return 1024;
    while (dirent* e = readdir(dir)) {
      const int fd = std::atoi(e->d_name);
      if (fd > top) top = fd;
    }
    closedir(dir);
    return top;
  }

  rlimit saved_{};
  bool lowered_ = false;
  bool ok_ = false;
  std::vector<int> fds_;
};

/// User and system CPU time of this process so far.
inline std::chrono::microseconds process_cpu_time() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  auto us = [](const timeval& t) {
    return std::chrono::seconds(t.tv_sec) + std::chrono::microseconds(t.tv_usec);
  };
  return us(ru.ru_utime) + us(ru.ru_stime);
}

}  // namespace mc::test
