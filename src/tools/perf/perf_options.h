// SPDX-License-Identifier: Apache-2.0
// The command line of mc_perftest, compatible with ucx_perftest's: the same
// letters with the same meanings, so the same scripts drive both tools.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "tools/perf/perf_params.h"
#include "tools/perf/perf_registry.h"
#include "tools/perf/perf_rte.h"

namespace mc::perf {

/// Everything the command line says: the run's parameters and how this
/// process takes part in it and reports it.
struct Options {
  Params params;
  std::string server;          ///< the server's host: act as the client
  uint16_t port = 13337;       ///< -p: control connection
  bool loopback = false;       ///< -l: client and server in this process
  std::vector<unsigned> cpus;  ///< -c: CPUs to run on
  bool csv = false;            ///< -v
  bool numeric = false;        ///< -N: thousands separators
  bool final_only = false;     ///< -f: no progress output
  bool extra_info = false;     ///< -I / --full: the environment of the run
  bool limits = false;         ///< --limits
  unsigned senders = 0;        ///< --senders: with --limits, also the TCP fan-in
  /// --async: UCT transports' background work (sockets of tcp) on a thread
  /// of its own (true), or in the test thread's progress() (false, as UCX
  /// progresses its transports; client/server mode only).
  bool async_thread = false;
  bool test_given = false;  ///< -t was given
  bool tl_given = false;    ///< -x was given
  bool dev_given = false;   ///< -d was given
  Duration timeout{60000};  ///< --timeout; negative: no limit

  /// Only --limits: measure the machine and exit.
  bool limits_only() const { return limits && !test_given; }
  bool is_server() const { return server.empty() && !loopback && !limits_only(); }
};

/// Parses the command line. InvalidParam after printing the reason and the
/// usage to stderr (exit code 2); Canceled after printing the help (-h).
Result<Options> parse_options(int argc, char** argv, const Registry& registry);

/// Documents every option.
void print_usage(FILE* out, const char* prog, const Registry& registry);

}  // namespace mc::perf
