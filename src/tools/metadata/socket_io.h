// SPDX-License-Identifier: Apache-2.0
// Socket reads and writes of mc_metadata_server bounded by a deadline for the
// whole operation, not per byte: a client that trickles or does not read
// cannot hold a connection's thread past it.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <string_view>

namespace mc::tools::metadata {

using Clock = std::chrono::steady_clock;

/// Outcome of recv_within().
enum class RecvResult { Data, Closed, TimedOut };

/// Waits until `deadline` for bytes, then reads at most `size` of them into
/// `data` (`*got` of them). Closed also covers a reset or an error.
RecvResult recv_within(int fd, char* data, size_t size, Clock::time_point deadline, size_t* got);

/// Sends `head` then `body` by the deadline. False on an error or when time
/// ran out; then the socket is set to reset on close, so the kernel drops
/// what the client did not take instead of keeping it queued.
bool send_within(int fd, std::string_view head, std::string_view body, Clock::time_point deadline);

/// After an error answer: stops sending and reads what the client still
/// sends (at most 16 MiB, until `deadline`), so that closing with unread data
/// does not reset the connection before the client has read the answer.
void drain_within(int fd, Clock::time_point deadline);

}  // namespace mc::tools::metadata
