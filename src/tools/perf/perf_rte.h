// SPDX-License-Identifier: Apache-2.0
// Rte: the control channel between client and server (ucx_perftest's
// "sock rte"): one TCP connection for parameters, addresses, barriers, the
// end of a test and its verdict. In loopback it is a socket pair.
#pragma once

#include <chrono>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ucs/status/status.h"

namespace mc::perf {

using ucs::Result;
using ucs::Status;

/// Negative: no limit.
using Duration = std::chrono::milliseconds;

/// Messages on the channel. Frame: u8 type | u32 payload length (LE) | payload.
enum class MsgType : uint8_t {
  Params = 1,   ///< client -> server: encode_params()
  Setup = 2,    ///< both ways: the test's resources (addresses, keys)
  Barrier = 3,  ///< both ways, empty
  Done = 4,     ///< client -> server: the client has finished sending
  Verdict = 5,  ///< server -> client: u8 ok | string why
  Error = 6,    ///< either way: text; the sender gives up
};

class Rte {
 public:
  /// Server: listens on `port` of every IPv4 address and accepts one client.
  /// Timeout when none comes within `timeout`; IoError when the port cannot be
  /// bound (logged with the errno text).
  static Result<std::unique_ptr<Rte>> accept(uint16_t port, Duration timeout);

  /// Client: connects to `host`:`port`, retrying while the server is not yet
  /// listening. Timeout (logged) when no server answers within `timeout`;
  /// Unreachable when `host` does not resolve.
  static Result<std::unique_ptr<Rte>> connect(const std::string& host, uint16_t port,
                                              Duration timeout);

  /// Two connected ends, for a client and a server thread in one process.
  static Status pair(std::unique_ptr<Rte>* a, std::unique_ptr<Rte>* b);

  ~Rte();
  Rte(const Rte&) = delete;
  Rte& operator=(const Rte&) = delete;

  /// Sends one message. ConnectionReset when the peer is gone.
  Status send(MsgType type, std::span<const uint8_t> payload = {});

  /// Tells the peer this side gives up, and why (best effort).
  void send_error(const std::string& text);

  /// The next message, which must be of `type`. Timeout after `timeout`;
  /// ConnectionReset when the peer closed; Rejected when the peer sent an
  /// Error (its text is logged); BadData for a message of another type.
  Result<std::vector<uint8_t>> recv(MsgType type, Duration timeout);

  /// Never blocks: true when a message waits, false when none does;
  /// ConnectionReset when the peer is gone; Rejected when it sent an Error.
  Result<bool> poll();

  /// Sends a Barrier and waits for the peer's.
  Status barrier(Duration timeout);

  /// Stops logging the peer's failures and departure: in loopback the other
  /// thread reports its own failure.
  void set_quiet() { quiet_ = true; }

  /// "host:port" of the peer, or "loopback".
  const std::string& peer_name() const { return peer_; }

 private:
  Rte(int fd, std::string peer) : fd_(fd), peer_(std::move(peer)) {}
  Status read_full(void* data, size_t length, std::chrono::steady_clock::time_point deadline,
                   bool forever);

  int fd_;
  std::string peer_;
  bool quiet_ = false;
};

}  // namespace mc::perf
