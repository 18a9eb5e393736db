// SPDX-License-Identifier: Apache-2.0
// RpcServer: the Transfer Engine's RPC listener. A TCP socket on a port of
// [MC_MIN_RPC_PORT, MC_MAX_RPC_PORT] (or a given one) served by its own
// thread: one request (handshake.h) per connection, many connections at
// once, each within one deadline, with a cap on those not yet answered.
// Requests: a segment descriptor (the handshake), and the notifications'
// kNotify / kNotifyKey, handed to a RequestHandler once the token passed.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "ucp/te/handshake.h"
#include "ucs/log/rate_limiter.h"
#include "ucs/status/status.h"
#include "ucs/sys/visibility.h"

namespace mc::te {

using ucs::Result;
using ucs::Status;

/// Answers a request for segment `name`: the descriptor JSON, or an error
/// status with `*error` set (sent back as the frame's text).
using SegmentProvider =
    std::function<Result<std::string>(const std::string& name, std::string* error)>;

/// Answers a kNotify or kNotifyKey request: `body` is its payload after the
/// token (which the listener checked), `peer` "a.b.c.d:port" or
/// "[v6]:port". Runs on the
/// listener's thread: it must not block.
using RequestHandler =
    std::function<RpcReply(uint16_t code, std::string_view body, const std::string& peer)>;

/// Error texts sent back are cut to this many bytes: a request cannot make
/// the listener echo its (up to MC_HANDSHAKE_MAX_LENGTH) segment name.
inline constexpr size_t kRpcMaxErrorText = 256;

class MC_INTERNAL RpcServer {
 public:
  struct Params {
    /// An IPv4 or IPv6 address; empty: every address, IPv4 and IPv6 ("::"
    /// accepting both), or every IPv4 one (0.0.0.0) where IPv6 is off.
    std::string bind_ip;
    uint16_t port = 0;  ///< 0: the first free port of [min_port, max_port], from a random start
    uint16_t min_port = 15000;
    uint16_t max_port = 17000;
    size_t max_length = 1 << 20;
    /// Whole life of one connection: request read and reply sent (MC_HANDSHAKE_TIMEOUT).
    std::chrono::nanoseconds io_timeout = std::chrono::seconds(5);
    std::string auth_token;  ///< when not empty, every request must carry it (MC_AUTH_TOKEN)
    /// Connections not yet answered; one more closes the oldest (MC_RPC_MAX_PENDING).
    size_t max_pending = 64;
    /// The same for one peer IP address (MC_RPC_MAX_PENDING_PER_PEER).
    size_t max_pending_per_peer = 16;
    /// listen() backlog of the listening socket (MC_HANDSHAKE_LISTEN_BACKLOG).
    int backlog = 128;
    /// How long accepting pauses when the process is out of descriptors or memory.
    std::chrono::nanoseconds accept_backoff = std::chrono::milliseconds(100);
  };

  /// Binds and starts the serving thread. Busy when no port of the range
  /// (or the given port) is free, IoError for other socket failures; logged.
  /// Without a `handler`, kNotify and kNotifyKey are unknown codes.
  static Result<std::unique_ptr<RpcServer>> start(const Params& params, SegmentProvider provider,
                                                  RequestHandler handler = {});
  /// Stops the thread and closes every socket.
  ~RpcServer();
  RpcServer(const RpcServer&) = delete;
  RpcServer& operator=(const RpcServer&) = delete;

  uint16_t port() const { return port_; }

 private:
  struct Conn;
  enum class Step { More, Close };

  RpcServer(const Params& params, SegmentProvider provider, RequestHandler handler);
  Status bind_listen();
  void run();
  /// Closes connections past their deadline; returns the poll timeout (ms).
  int expire(uint64_t now);
  void accept_ready(uint64_t now);
  /// Makes room for a connection from `ip` (its address, as text) under both caps.
  void make_room(const std::string& ip);
  void evict(std::list<Conn>::iterator it, const std::string& cap);
  /// Reads what arrived, answers a whole request, sends what the socket takes.
  Step progress(Conn& c);
  Step read_header(Conn& c);
  Step read_body(Conn& c);
  /// The reply to a whole request (empty: close without one).
  std::vector<uint8_t> answer(Conn& c);
  /// The token check of a request; false (logged) when it fails.
  bool token_ok(const Conn& c, const std::string& token);
  Step send_reply(Conn& c);

  Params params_;
  SegmentProvider provider_;
  RequestHandler handler_;
  int listen_fd_ = -1;
  int wake_fd_ = -1;  ///< eventfd: stops the thread
  uint16_t port_ = 0;
  std::string where_;  ///< "address:port" bound, for log messages
  std::thread thread_;

  // The serving thread only.
  std::list<Conn> conns_;       ///< oldest first
  uint64_t paused_until_ = 0;   ///< no accept before this (CLOCK_MONOTONIC ns)
  uint64_t accept_failed_ = 0;  ///< failed accepts since the last one that worked
  ucs::RateLimiter accept_log_;
  ucs::RateLimiter dropped_log_{std::chrono::seconds(1), 5};  ///< evicted, timed out
  ucs::RateLimiter bad_log_{std::chrono::seconds(1), 5};      ///< malformed or refused requests
};

}  // namespace mc::te
