// SPDX-License-Identifier: Apache-2.0
// RpcServer: the Transfer Engine's RPC listener. A TCP socket on a port of
// [MC_MIN_RPC_PORT, MC_MAX_RPC_PORT] (or a given one) served by its own
// thread: one handshake (handshake.h) per connection.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "ucs/status/status.h"

namespace mc::te {

using ucs::Result;
using ucs::Status;

/// Answers a request for segment `name`: the descriptor JSON, or an error
/// status with `*error` set (sent back as the frame's text).
using SegmentProvider =
    std::function<Result<std::string>(const std::string& name, std::string* error)>;

class RpcServer {
 public:
  struct Params {
    std::string bind_ip = "0.0.0.0";
    uint16_t port = 0;  ///< 0: the first free port of [min_port, max_port], from a random start
    uint16_t min_port = 15000;
    uint16_t max_port = 17000;
    size_t max_length = 1 << 20;
    std::chrono::nanoseconds io_timeout = std::chrono::seconds(5);
    std::string auth_token;  ///< when not empty, every request must carry it (MC_AUTH_TOKEN)
  };

  /// Binds and starts the serving thread. Busy when no port of the range
  /// (or the given port) is free, IoError for other socket failures; logged.
  static Result<std::unique_ptr<RpcServer>> start(const Params& params, SegmentProvider provider);
  /// Stops the thread and closes the socket.
  ~RpcServer();
  RpcServer(const RpcServer&) = delete;
  RpcServer& operator=(const RpcServer&) = delete;

  uint16_t port() const { return port_; }

 private:
  RpcServer(const Params& params, SegmentProvider provider)
      : params_(params), provider_(std::move(provider)) {}
  Status bind_listen();
  void run();
  void serve(int fd, const std::string& peer);

  Params params_;
  SegmentProvider provider_;
  int listen_fd_ = -1;
  int wake_fd_ = -1;  ///< eventfd: stops the thread
  uint16_t port_ = 0;
  std::thread thread_;
};

}  // namespace mc::te
