// SPDX-License-Identifier: Apache-2.0
// Deadline-bounded socket I/O: poll() for the time left, then a
// non-blocking recv or sendmsg; the socket itself stays blocking.
#include "tools/metadata/socket_io.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <cerrno>

namespace mc::tools::metadata {

namespace {

// Milliseconds to the deadline, rounded up; 0 once it has passed.
int ms_left(Clock::time_point deadline) {
  const auto left = deadline - Clock::now();
  if (left <= Clock::duration::zero()) return 0;
  const auto ms = std::chrono::ceil<std::chrono::milliseconds>(left).count();
  return ms > 1000000 ? 1000000 : static_cast<int>(ms);
}

// True when `events` became ready before the deadline.
bool wait_for(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    pollfd p{fd, events, 0};
    const int n = poll(&p, 1, ms_left(deadline));
    if (n > 0) return true;
    if (n == 0 && Clock::now() >= deadline) return false;
    if (n < 0 && errno != EINTR) return false;
  }
}

}  // namespace

RecvResult recv_within(int fd, char* data, size_t size, Clock::time_point deadline, size_t* got) {
  for (;;) {
    const ssize_t n = recv(fd, data, size, MSG_DONTWAIT);
    if (n > 0) {
      *got = static_cast<size_t>(n);
      return RecvResult::Data;
    }
    if (n == 0) return RecvResult::Closed;
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) return RecvResult::Closed;
    if (!wait_for(fd, POLLIN, deadline)) return RecvResult::TimedOut;
  }
}

bool send_within(int fd, std::string_view head, std::string_view body, Clock::time_point deadline) {
  iovec iov[2] = {{const_cast<char*>(head.data()), head.size()},
                  {const_cast<char*>(body.data()), body.size()}};
  size_t first = 0;
  while (first < 2) {
    if (iov[first].iov_len == 0) {
      ++first;
      continue;
    }
    msghdr msg{};
    msg.msg_iov = iov + first;
    msg.msg_iovlen = 2 - first;
    const ssize_t n = sendmsg(fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n >= 0) {
      size_t sent = static_cast<size_t>(n);
      for (; first < 2 && sent >= iov[first].iov_len; ++first) sent -= iov[first].iov_len;
      if (first < 2) {
        iov[first].iov_base = static_cast<char*>(iov[first].iov_base) + sent;
        iov[first].iov_len -= sent;
      }
      continue;
    }
    if (errno == EINTR) continue;
    if ((errno != EAGAIN && errno != EWOULDBLOCK) || !wait_for(fd, POLLOUT, deadline)) {
      const linger reset{1, 0};
      setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, sizeof(reset));
      return false;
    }
  }
  return true;
}

void drain_within(int fd, Clock::time_point deadline) {
  shutdown(fd, SHUT_WR);
  char buf[65536];
  size_t drained = 0;
  while (drained < (size_t{16} << 20)) {
    size_t got = 0;
    if (recv_within(fd, buf, sizeof(buf), deadline, &got) != RecvResult::Data) return;
    drained += got;
  }
}

}  // namespace mc::tools::metadata
