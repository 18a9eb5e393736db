// SPDX-License-Identifier: Apache-2.0
// The Transfer Engine tests te_write and te_read, in the style of Mooncake's
// transfer_engine_bench: a target serves a buffer; an initiator opens its
// segment and loops batches of reads or writes on --threads for --duration.
// te_lat: the initiator times one task at a time, from submitTransfer to
// COMPLETED, and prints its percentiles per size.
#pragma once

#include <cstdio>

#include "tools/perf/perf_registry.h"

namespace mc::perf {

/// Lists te_write, te_read and te_lat (for -h); they run through run_te_perf().
void register_te_tests(Registry& registry);

/// Prints the Transfer Engine tests' options (part of -h).
void print_te_help(FILE* out);

/// Whether the command line names a Transfer Engine test (-t te_write,
/// te_read, te_lat): it then has its own options and goes to run_te_perf().
bool te_perf_requested(int argc, char** argv);

/// Parses the Transfer Engine options and runs the target (no --segment_id,
/// or --mode=target) or the initiator. Returns the exit status: 0, 1 when
/// the test failed, 2 for an invalid command line.
int run_te_perf(int argc, char** argv);

}  // namespace mc::perf
