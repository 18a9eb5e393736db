// SPDX-License-Identifier: Apache-2.0
// Whole writes and reads over the pipes between a test and the processes it
// forks, and length-prefixed blobs (addresses, packed keys) over them.
#pragma once

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <vector>

namespace mc::test {

/// Writes all `n` bytes; false when the other end went away.
inline bool write_all(int fd, const void* data, size_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
  while (n > 0) {
    const ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

/// Reads exactly `n` bytes; false at end of file or on an error.
inline bool read_all(int fd, void* data, size_t n) {
  auto* p = static_cast<uint8_t*>(data);
  while (n > 0) {
    const ssize_t r = read(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

/// True when a read of `fd` would not block (data, end of file or an error).
inline bool readable(int fd) {
  pollfd p{fd, POLLIN, 0};
  return poll(&p, 1, 0) > 0;
}

/// A 64-bit length, then the bytes.
inline bool write_blob(int fd, const std::vector<uint8_t>& v) {
  const uint64_t n = v.size();
  return write_all(fd, &n, sizeof(n)) && write_all(fd, v.data(), v.size());
}

/// What write_blob() wrote; false past 1 MiB (a broken peer, not a blob).
inline bool read_blob(int fd, std::vector<uint8_t>* v) {
  uint64_t n = 0;
  if (!read_all(fd, &n, sizeof(n)) || n > (1u << 20)) return false;
  v->resize(n);
  return read_all(fd, v->data(), n);
}

}  // namespace mc::test
