// SPDX-License-Identifier: Apache-2.0
// The test registry: test name -> description and runner. Each API family
// (UCT now; UCP and Transfer Engine later) adds its tests with one explicit
// register_*_tests() call from main, never from a static constructor.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "tools/perf/perf_params.h"

namespace mc::ucs {
class EventLoop;
}

namespace mc::perf {

class Measurement;
class Rte;
class Watchdog;

/// Which layer a test exercises.
enum class Api : uint8_t { Uct, Ucp, TransferEngine };
const char* api_name(Api api);

/// How iterations relate to latency: a ping-pong iteration is a round trip
/// (half of it is reported), a stream iteration is one posted operation.
enum class TestType : uint8_t { PingPong, Stream };

/// Static facts about one test.
struct TestInfo {
  std::string name;  ///< as given to -t, e.g. "am_lat"
  Api api = Api::Uct;
  TestType type = TestType::PingPong;
  std::string desc;       ///< "active message latency"
  std::string lat_label;  ///< ucx_perftest's latency column title: "latency" or "overhead"
  Layout default_layout = Layout::Short;
};

/// Which end of the connection a process plays.
enum class Role : uint8_t { Client, Server };

/// What the runner reports about the run (for the header and -I).
struct RunInfo {
  std::string transport;    ///< "tcp"
  std::string device;       ///< "lo"
  std::string device_type;  ///< "net", "shm", "self"
  std::string protocol;     ///< "am_short", "put_zcopy", ...
  Layout layout = Layout::Short;
  unsigned window = 1;
  bool net = false;                  ///< a network transport (its limit is kernel TCP, not memcpy)
  std::vector<std::string> details;  ///< "key: value" lines for -I (transport attributes)
  std::string check;                 ///< the final data check, "passed (...)" when it passed
};

/// Everything a runner needs. The runner owns its resources; it reports
/// through `measure` (client only) and `on_start`.
struct RunContext {
  const Params& params;
  Role role;
  bool loopback = false;                     ///< client and server are threads of this process
  Rte* rte = nullptr;                        ///< control channel to the peer
  std::chrono::milliseconds timeout{60000};  ///< for control messages; negative: none
  Watchdog* watchdog = nullptr;              ///< bounds every wait
  ucs::EventLoop* async = nullptr;           ///< background service for transports
  Measurement* measure = nullptr;            ///< the client's clock; null on the server
  RunInfo* info = nullptr;                   ///< filled by the runner
  std::function<void()> on_start;            ///< called once, right before the first iteration
};

/// Runs one test on one side. Returns Ok when the run and its data check
/// passed; an error (already logged, with the cause) otherwise.
using RunFn = std::function<Status(const TestInfo& test, RunContext& ctx)>;

class Registry {
 public:
  struct Entry {
    TestInfo info;
    RunFn run;
  };

  /// Adds a test; a later test of the same name replaces the earlier one.
  void add(TestInfo info, RunFn run);
  /// Makes `alias` another name of `name` (e.g. get_bw for get).
  void add_alias(std::string alias, std::string name);

  /// The test called `name` or one of its aliases; null when unknown.
  const Entry* find(std::string_view name) const;
  const std::vector<Entry>& entries() const { return entries_; }
  /// The aliases of `name`, for the help text.
  std::vector<std::string> aliases_of(std::string_view name) const;

 private:
  std::vector<Entry> entries_;
  std::vector<std::pair<std::string, std::string>> aliases_;  // alias -> name
};

}  // namespace mc::perf
