// SPDX-License-Identifier: Apache-2.0
// The command line of the te_* tests: Mooncake's transfer_engine_bench flags
// in gflags syntax (--flag=v, --flag v, -flag=v, --noflag for booleans), each
// with its meaning in mc or a note saying what mc does instead.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tools/perf/perf_params.h"

namespace mc::perf {

/// A target given --duration serves this many seconds longer.
inline constexpr int kTeTargetSlackS = 30;

struct TeOptions {
  std::string test = "te_read";    ///< te_write, te_read (--operation, default read) or te_lat
  std::string operation = "read";  ///< --operation: what te_lat's tasks do
  std::string mode;                ///< target or initiator; empty: by --segment_id
  std::string metadata_server = "P2PHANDSHAKE";
  std::string segment_id;  ///< one segment, or (te_write, te_read) a comma-separated list
  std::string local_server_name;
  uint64_t batch_size = 128;
  uint64_t block_size = 65536;
  bool block_size_given = false;  ///< te_lat: only that size, else 8 B, 4 KiB and 64 KiB
  uint64_t iterations = 10000;    ///< te_lat: measured transfers per size
  uint64_t buffer_size = uint64_t{1} << 30;
  uint64_t threads = 12;
  uint64_t duration = 10;
  bool duration_given = false;
  std::string protocol;  ///< --protocol as given (empty: mc's own selection)
  std::string report_unit = "GB";
  uint64_t report_precision = 2;
  bool init_mem = false;  ///< --init_mem: fill the buffers with 0xCC before registering
  /// --alloc (mc's own): the buffers' pages, base pages (Mooncake's bench's)
  /// or huge-page advised (the UCT tests' --alloc heap), so that a ceiling
  /// and the run it bounds have the same kind.
  Alloc alloc = Alloc::Pages;
  /// --warmup_batches (mc's own): batches each thread of te_write / te_read
  /// runs before the clock starts. The first batch pays the first touch of
  /// the target's pages (on a VM, seemingly the host's too), which a run of
  /// a few batches does not amortise; 0 times it, as Mooncake's bench does.
  uint64_t warmup_batches = 1;
  /// --notify (mc's own): after the run, the latency of batches with a
  /// notification against plain ones, alternating, `notify_rounds` pairs.
  bool notify = false;
  uint64_t notify_rounds = 200;
  /// --target_offset (mc's own): where the initiator's slots start in the
  /// target's buffer, so that initiators sharing one target stay apart.
  uint64_t target_offset = 0;
  /// MC_* settings the flags stand for (--protocol, --device_name,
  /// --nic_priority_matrix), set in the environment before the engine starts.
  std::vector<std::pair<std::string, std::string>> env;
  /// One line per flag whose meaning mc does not have: what mc does instead.
  std::vector<std::string> notes;
};

/// Parses argv into `o`. Returns -1 when the run may go on, 0 after printing
/// the help (-h), 2 (the usage exit status) after printing why to stderr.
int parse_te_options(int argc, char** argv, TeOptions* o);

/// Whether `arg` ("--mode=target", "-segment_id", "--noinit_mem") names a
/// flag of the te_* tests that the UCT and UCP tests do not have (not
/// --alloc): such a command line runs them without -t.
bool is_te_flag(std::string_view arg);

/// Bytes of one --report_unit (GB 10^9, GiB 2^30, Gb 10^9 / 8, ... as
/// Mooncake's bench); 0 for an unknown unit.
double report_unit_bytes(const std::string& unit);

/// Prints the te_* part of -h.
void print_te_usage(FILE* out);

}  // namespace mc::perf
