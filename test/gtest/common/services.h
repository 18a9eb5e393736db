// SPDX-License-Identifier: Apache-2.0
// Real metadata services for tests: etcd, redis-server and mc_metadata_server
// started as child processes on free loopback ports with data in a temporary
// directory, waited for until they answer, and killed and removed at the end.
// A missing binary is a test failure naming it, never a skip.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace mc::test {

/// Which service.
enum class Service { Etcd, Redis, MetadataServer };

/// "etcd", "redis" or "http" (the metadata server): for test names.
std::string service_name(Service service);

/// Owns the services it starts. Not thread-safe: use it from the test thread.
///
///   Services services;
///   const std::string etcd = services.start_etcd();   // "etcd://127.0.0.1:<port>"
///   ASSERT_FALSE(etcd.empty());                        // the failure says why
///   services.stop(Service::Etcd);                      // "server stopped"
///   ASSERT_TRUE(services.restart(Service::Etcd));      // same port, same data
class Services {
 public:
  Services();
  ~Services();  ///< kills every running service and removes the temporary directory
  Services(const Services&) = delete;
  Services& operator=(const Services&) = delete;

  /// Starts etcd (client and peer URLs on free 127.0.0.1 ports). Returns
  /// "etcd://127.0.0.1:<client port>", or "" after adding a test failure.
  std::string start_etcd();
  /// Starts redis-server (--save '', --appendonly no), with --requirepass when
  /// `password` is not empty. Returns "redis://127.0.0.1:<port>" (no password
  /// in it), or "" after adding a test failure.
  std::string start_redis(const std::string& password = "");
  /// Starts mc_metadata_server of this build tree. Returns
  /// "http://127.0.0.1:<port>/metadata", or "" after adding a test failure.
  std::string start_metadata_server();
  /// The start_*() of `service` (redis without a password).
  std::string start(Service service);

  /// SIGTERM, then SIGKILL after 5 s; waits for the exit. The port and data stay.
  void stop(Service service);
  /// SIGKILL at once (a crash); waits for the exit.
  void kill(Service service);
  /// Starts a stopped service again on the same port with the same data.
  /// False after adding a test failure.
  bool restart(Service service);

  bool running(Service service) const;
  /// The client port, 0 when the service was never started.
  uint16_t port(Service service) const;
  /// The connection string start_*() returned, "" when never started.
  std::string url(Service service) const;
  /// Last lines of the service's log (stdout and stderr), for failure messages.
  std::string log_tail(Service service) const;
  /// The temporary directory holding data and logs.
  const std::string& dir() const { return dir_; }

  /// Path of a binary: an absolute path as is, else searched in PATH; "" when
  /// missing.
  static std::string find_binary(const std::string& name);

 private:
  struct Proc {
    std::string name;               // for messages
    std::vector<std::string> argv;  // argv[0] is the binary's path
    std::string log;
    std::string url;
    uint16_t port = 0;
    pid_t pid = -1;
  };

  Proc& proc(Service service) { return procs_[static_cast<int>(service)]; }
  const Proc& proc(Service service) const { return procs_[static_cast<int>(service)]; }
  bool launch(Service service);
  bool wait_ready(Service service);
  bool answers(Service service) const;
  uint16_t free_port();
  void end(Service service, bool graceful);

  std::string dir_;
  std::string redis_password_;
  std::vector<uint16_t> used_ports_;
  Proc procs_[3];
};

/// Path of mc_metadata_server in this build tree.
std::string metadata_server_path();

/// Sends one HTTP/1.1 request to 127.0.0.1:`port` and returns the status code
/// (0 when no answer within `timeout_ms`); the body goes to `*body`.
int http_request(uint16_t port, const std::string& method, const std::string& target,
                 const std::string& body_out, std::string* body, int timeout_ms = 2000);

/// Sends `bytes` as they are to 127.0.0.1:`port` and returns everything the
/// peer sent until it closed or `timeout_ms` passed ("" when no connection).
/// The sending side is shut down after `bytes`, as a client that is done.
std::string raw_exchange(uint16_t port, const std::string& bytes, int timeout_ms = 2000);

}  // namespace mc::test
