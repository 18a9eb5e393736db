// SPDX-License-Identifier: Apache-2.0
// mc_metadata_server's core: a listening socket, one thread per connection,
// keys kept in memory. GET/PUT/DELETE /metadata?key=<k>, GET /health.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "tools/metadata/http_request.h"
#include "ucs/status/status.h"

namespace mc::tools::metadata {

struct ServerOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 8080;
  size_t max_body = size_t{64} << 20;    ///< largest value accepted (413 beyond)
  size_t max_header = size_t{64} << 10;  ///< request line and headers
  size_t max_connections = 256;          ///< concurrent connections (503 beyond)
  int idle_timeout_s = 60;               ///< an idle connection is closed after it
};

class MetadataServer {
 public:
  /// Binds and listens; `*error` names the address and the cause on failure.
  static ucs::Result<std::unique_ptr<MetadataServer>> create(const ServerOptions& options,
                                                             std::string* error);
  ~MetadataServer();

  /// The port actually bound (options.port may be 0).
  uint16_t port() const { return port_; }
  /// Accepts connections until stop(); returns then.
  void run();
  /// Stops accepting (thread-safe, async-signal-safe enough: a shutdown()).
  void stop();

 private:
  MetadataServer(const ServerOptions& options, int fd, uint16_t port)
      : options_(options), listen_fd_(fd), port_(port) {}
  void serve(int fd);
  // Handles one request; returns the status, the body and the content type.
  int handle(const HttpRequest& req, std::string* body, std::string* type);

  const ServerOptions options_;
  const int listen_fd_;
  const uint16_t port_;
  std::atomic<bool> stopping_{false};
  std::atomic<size_t> connections_{0};
  std::mutex lock_;  // guards store_
  std::map<std::string, std::string> store_;
};

}  // namespace mc::tools::metadata
