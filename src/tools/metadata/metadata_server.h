// SPDX-License-Identifier: Apache-2.0
// mc_metadata_server's core: a listening socket, one thread per connection,
// keys kept in memory. GET/PUT/DELETE /metadata?key=<k>, GET /health.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "tools/metadata/connection_table.h"
#include "tools/metadata/http_request.h"
#include "tools/metadata/metadata_store.h"
#include "tools/metadata/socket_io.h"
#include "ucs/status/status.h"

namespace mc::tools::metadata {

struct ServerOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 8080;
  size_t max_body = size_t{64} << 20;    ///< largest value accepted (413 beyond)
  size_t max_header = size_t{64} << 10;  ///< request line and headers (431 beyond)
  size_t max_total = size_t{1} << 30;    ///< keys and values in all (507 beyond)
  /// Bytes of requests received and not yet handled, in all connections (503 beyond).
  size_t max_in_flight = size_t{1} << 30;
  size_t max_connections = 256;          ///< open connections (idle ones evicted beyond)
  size_t max_connections_per_peer = 64;  ///< open connections of one peer address
  /// Bound of reading one request, head and body, from its first byte (from
  /// the accept for a connection's first request).
  std::chrono::milliseconds request_timeout{10000};
  /// Bound of sending one answer.
  std::chrono::milliseconds send_timeout{10000};
  /// A connection that sends nothing of its next request for this long is closed.
  std::chrono::milliseconds idle_timeout{60000};
  /// When not empty, every request but GET /health needs "Authorization: Bearer <token>".
  std::string auth_token;
};

class MetadataServer {
 public:
  /// Binds and listens; `*error` names the address and the cause on failure.
  static ucs::Result<std::unique_ptr<MetadataServer>> create(const ServerOptions& options,
                                                             std::string* error);
  ~MetadataServer();

  /// The port actually bound (options.port may be 0).
  uint16_t port() const { return port_; }
  /// Accepts connections until stop(); returns then. Out of file
  /// descriptors or memory, it refuses clients (accepts and closes them with
  /// a spare descriptor held for that), retries every kAcceptBackoff and
  /// logs at most once per kRefusalLogInterval.
  void run();
  /// Stops accepting (thread-safe, async-signal-safe enough: a shutdown()).
  void stop();

  static constexpr std::chrono::milliseconds kAcceptBackoff{100};
  static constexpr std::chrono::seconds kRefusalLogInterval{10};

 private:
  /// One answer: a text, or a stored value sent without a copy.
  struct Reply {
    int status = 200;
    std::string text;
    std::shared_ptr<const std::string> value;  ///< the body when set, else `text`
    std::string etag;                          ///< the ETag header when not empty
  };

  /// What a connection's thread knows between reads.
  struct Connection {
    std::string buf;             ///< received, not yet answered
    size_t scanned = 0;          ///< how far find_head_end() searched buf
    size_t need = 0;             ///< the request's whole size once its head is parsed, else 0
    bool continued = false;      ///< "100 Continue" sent for this request
    bool idle = false;           ///< between requests, nothing of the next one received
    size_t counted = 0;          ///< bytes of buf counted in in_flight_
    Clock::time_point deadline;  ///< of the request being read, or of the idle wait
  };

  MetadataServer(const ServerOptions& options, int fd, uint16_t port);
  void admit(int fd, const std::string& peer);
  void refuse_while_exhausted(int error);
  void serve(uint64_t id, int fd);
  // Acts on the request at the start of c->buf, parsed or head only; false
  // when the connection is to be closed.
  bool take_request(uint64_t id, int fd, Connection* c);
  // Counts `more` bytes about to join c->buf in in_flight_; false when that
  // would pass max_in_flight.
  bool count_in_flight(Connection* c, size_t more);
  // Gives back what c->buf no longer holds (all of it when `all`).
  void uncount_in_flight(Connection* c, bool all);
  // False when the client must be answered 401.
  bool authorized(const HttpRequest& req) const;
  Reply handle(HttpRequest& req);
  Reply handle_key(HttpRequest& req, const std::string& key);
  Clock::time_point send_deadline() const { return Clock::now() + options_.send_timeout; }
  bool respond(int fd, const Reply& reply, bool keep_alive, Clock::time_point deadline) const;
  void respond_and_close(int fd, int status, const std::string& text) const;

  const ServerOptions options_;
  const int listen_fd_;
  const uint16_t port_;
  std::atomic<bool> stopping_{false};
  std::atomic<size_t> in_flight_{0};  // sum of the connections' Connection::counted
  ConnectionTable connections_;
  MetadataStore store_;

  // The acceptor's own state (run() only): the spare descriptor, and the
  // refusals while out of resources, for the rate-limited log.
  int spare_fd_ = -1;
  bool exhausted_ = false;
  uint64_t refused_ = 0;         // clients accepted and closed at once, since exhausted_
  uint64_t failed_accepts_ = 0;  // accept() failures, since exhausted_
  uint64_t refused_logged_ = 0;  // refused_ at the last log line
  Clock::time_point last_log_;
};

}  // namespace mc::tools::metadata
