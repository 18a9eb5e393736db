// SPDX-License-Identifier: Apache-2.0
// The machine's limits, measured without mc: memcpy bandwidth, kernel TCP
// throughput over 127.0.0.1 and TCP ping-pong latency, so a report can say
// which fraction of them a transport reached.
#pragma once

#include <cstddef>

#include "ucs/status/status.h"

namespace mc::perf {

struct Limits {
  size_t size = 0;       ///< message size of the bandwidth measurements
  double memcpy_bw = 0;  ///< bytes per second, memcpy() of `size` bytes
  double tcp_bw = 0;     ///< bytes per second, one TCP stream of `size`-byte writes
  double tcp_lat = 0;    ///< seconds, half the round trip of 8 bytes over TCP, busy-polling
  /// Seconds, the round trip of `size` bytes out and 8 back over TCP, both
  /// ends busy-polling: a write and its acknowledgement, the kernel's floor
  /// for one transfer of `size` bytes (0: `size` is 8 or less).
  double tcp_rtt = 0;
  /// Seconds, half the round trip of `size` bytes each way over TCP, both
  /// ends busy-polling: the shape of a latency test's ping-pong (0: `size`
  /// is 8 or less, where tcp_lat is it).
  double tcp_size_lat = 0;
  size_t footprint = 0;  ///< bytes of each buffer of the cold copy (0: not measured)
  /// Bytes per second, memcpy() of `size` bytes cycling through two buffers
  /// of `footprint` bytes (copy i at offset (i mod n) x size in both): memory
  /// that is not in the cache, as a transfer spread over a large buffer.
  double memcpy_cold_bw = 0;
  unsigned senders = 0;  ///< streams of the fan-in (0: not measured)
  /// Bytes per second, `senders` TCP streams of `size`-byte writes, each
  /// from its own thread writing blocking, into one thread that reads them
  /// all through epoll (each message into the next slot of a `footprint`-byte
  /// buffer when one is given): the kernel's ceiling for a fan-in of
  /// initiators to one target whose one thread serves their connections.
  double tcp_fanin_bw = 0;
};

/// Measures the limits (about a second in all, 0.8 s more above 8 bytes;
/// with a footprint above the size, also the cold copy; with `senders`,
/// also the fan-in, another second). IoError (logged) when a socket cannot
/// be set up, NoMemory when the footprint's buffers cannot be had; every
/// wait is bounded.
ucs::Result<Limits> measure_limits(size_t size, size_t footprint = 0, unsigned senders = 0);

}  // namespace mc::perf
