// SPDX-License-Identifier: Apache-2.0
// The te_* initiators' targets: opening each --segment_id, and what setting
// them up cost (openSegment, the first transfer, a second one, VmRSS), for
// contrib/bench-compare-te-scale.sh; and one timed transfer (te_lat's).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mc/transfer_engine.h"
#include "tools/perf/te_perf_options.h"

namespace mc::perf {

/// One opened target: its segment and where the slots start in its buffer.
struct Remote {
  SegmentHandle seg = -1;
  uint64_t addr = 0;
};

/// Opens segment `name`; the slots start --target_offset into its first
/// buffer of at least that plus `needed` bytes. False after saying why.
bool open_target(TransferEngine& engine, const TeOptions& o, const std::string& name, size_t needed,
                 Remote* out);

/// One transfer of `req` in a batch of its own, submitTransfer to a final
/// state, polled without pause; `*usec` its time. False (said why unless
/// the engine refused) when it did not complete.
bool time_one(TransferEngine& engine, const TransferRequest& req, double* usec);

/// What setting up the targets cost, one entry per target in --segment_id
/// order, and this process's VmRSS (KiB, -1 when unreadable) before the
/// opens, after them and after the first transfers.
struct Setup {
  std::vector<double> open_us, first_us, steady_us;
  long rss_kib = -1, rss_opened_kib = -1, rss_connected_kib = -1;
};

/// Opens every segment of --segment_id one after the other (timing each),
/// then times one `op` of a block from `local` to each (the endpoint's
/// creation and wire-up), then a second one to each (steady).
bool open_targets(TransferEngine& engine, const TeOptions& o, size_t needed,
                  TransferRequest::OpCode op, uint8_t* local, std::vector<Remote>* targets,
                  Setup* setup);

/// Prints the set-up and memory lines and 'result test=te_setup ...'.
void report_setup(const Setup& s);

/// Prints the engine's endpoint store counters (getEndpointStoreStats): a
/// summary line and a `result test=te_endpoints` line.
void report_endpoints(const TransferEngine& engine);

}  // namespace mc::perf
