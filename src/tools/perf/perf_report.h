// SPDX-License-Identifier: Apache-2.0
// Reporter: what the client prints. ucx_perftest's description box, table
// and final row (or its CSV), a live progress line on a terminal, then mc's
// summary: latency percentiles, bandwidth, message rate, transport and
// protocol, the data check, and the fraction of the machine's limits.
#pragma once

#include <string>

#include "tools/perf/perf_limits.h"
#include "tools/perf/perf_measure.h"
#include "tools/perf/perf_options.h"

namespace mc::perf {

class Reporter {
 public:
  Reporter(const Options& options, const TestInfo& test);

  /// The description box and the table header, before the first iteration.
  void header(const RunInfo& info);

  /// The live progress line: only on a terminal, and not with -f or -v.
  void progress(const PerfResult& r);

  /// The final row, then (not with -v) the summary. `limits` may be null.
  void final(const PerfResult& r, const RunInfo& info, const Limits* limits);

  /// Whether progress() prints anything.
  bool live() const { return live_; }

 private:
  std::string row(const PerfResult& r) const;
  void clear_live();

  const Options& opt_;
  const TestInfo& test_;
  bool live_ = false;
  bool live_shown_ = false;
};

/// Prints the machine's limits (--limits), as a table or as CSV comments.
void print_limits(const Limits& limits, bool csv);

/// `v` with thousands separators: 1234567 -> "1,234,567".
std::string group_thousands(double v);

}  // namespace mc::perf
