// SPDX-License-Identifier: Apache-2.0
// Socket helpers of the tcp transport: listening, non-blocking connect, and
// the per-connection options from the configuration.
#pragma once

#include <cstdint>

#include "ucs/status/status.h"
#include "uct/tcp/tcp_config.h"

namespace mc::uct::tcp {

/// Which options apply_socket_options() sets.
enum class SocketOptions { All, Buffers, AllButBuffers };

/// Applies NODELAY, KEEPALIVE (its timings, USER_TIMEOUT), SNDBUF and RCVBUF.
/// Buffer sizes only work before the handshake (they fix the window scale;
/// shrinking them later makes the peer's segments get dropped): set them on
/// a socket before connect() or on the listener, whose accepted sockets
/// inherit them. Failures are logged and ignored: the connection works
/// without them.
void apply_socket_options(int fd, const TcpConfig& config, SocketOptions which);

/// A non-blocking listening socket bound to `ipv4` (network byte order) on
/// a port of `range` (0: any), with the configured buffer sizes; `*port`
/// receives the port. IoError (logged) when no port of the range can be bound.
ucs::Result<int> listen_socket(uint32_t ipv4, const PortRange& range, int backlog,
                               const TcpConfig& config, uint16_t* port);

/// A non-blocking socket bound to `local_ipv4` that connects to `ipv4:port`.
/// `*done` is set when the connection completed at once. IoError (logged)
/// when a system call fails; Unreachable when the kernel refuses at once.
ucs::Result<int> connect_socket(uint32_t local_ipv4, uint32_t ipv4, uint16_t port,
                                const TcpConfig& config, bool* done);

/// The outcome of a non-blocking connect (SO_ERROR): Ok, Unreachable
/// (refused, no route), Timeout or IoError; `*err` receives the errno.
ucs::Status connect_result(int fd, int* err);

/// "a.b.c.d:port" of the peer of `fd`, for log messages.
std::string peer_name(int fd);

}  // namespace mc::uct::tcp
