// SPDX-License-Identifier: Apache-2.0
// Protocol selection: for one operation, the size ranges in which short,
// bcopy, zero-copy or multi-lane zero-copy is fastest by the performance
// model, with forced thresholds. Pure; computed once per endpoint config.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "uct/api/types.h"
#include "ucs/sys/visibility.h"

namespace mc::ucp::proto {

/// The operations UCP selects protocols for.
enum class Op : uint8_t { Put, Get, Am };
/// "put", "get", "am".
MC_INTERNAL const char* op_name(Op op);

/// How one message is moved.
/// Rndv (active messages only): the sender sends a small request-to-send
/// with its rkey; the receiver gets the payload zero-copy and acknowledges.
enum class ProtoKind : uint8_t { Short, Bcopy, Zcopy, MultiZcopy, Rndv };
/// "short", "bcopy", "zcopy", "multi-zcopy", "rndv".
MC_INTERNAL const char* proto_kind_name(ProtoKind kind);

/// One lane's figures for one operation. Payload limits exclude UCP headers.
struct LanePerf {
  size_t lane = 0;  ///< the endpoint's lane index (for the table)
  bool has_short = false;
  bool has_bcopy = false;
  bool has_zcopy = false;
  size_t max_short = 0;      ///< payload bytes one short operation carries
  size_t max_bcopy = 0;      ///< payload bytes one bcopy fragment carries (> 0 with bcopy)
  size_t max_zcopy = 0;      ///< payload bytes one zcopy fragment carries (> 0 with zcopy)
  double latency = 0;        ///< seconds
  double overhead = 0;       ///< seconds per operation posted
  double bandwidth = 0;      ///< bytes per second (> 0)
  uct::LinearFunc reg_cost;  ///< seconds to register n bytes on this lane's md
};

/// Inputs of select_protocols().
struct ProtoSelectParams {
  Op op = Op::Put;
  LanePerf single;                     ///< the lane of short / bcopy / zcopy
  std::vector<LanePerf> rails;         ///< the multi-lane rails (>= 2 to offer multi-zcopy)
  size_t slice_size = 65536;           ///< multi-zcopy slice
  double copy_bandwidth = 8e9;         ///< memcpy into bounce buffers, bytes per second
  bool registered = false;             ///< the user's buffer is registered: no registration cost
  std::optional<size_t> bcopy_thresh;  ///< short only below it
  std::optional<size_t> zcopy_thresh;  ///< zero-copy only from it, short and bcopy only below
  /// Am only: the get the receiver of a rendezvous does (its lanes are the
  /// mirror of ours, so our get figures stand for them); no rendezvous when
  /// it has no zcopy. Its `lane` is the lane of the request-to-send.
  std::optional<LanePerf> rndv_get;
  std::optional<size_t> rndv_thresh;  ///< rendezvous from it, eager below
};

/// One row of the table: sizes [min, max] use `kind` on `lanes`.
struct ProtoRange {
  size_t min = 0;
  size_t max = 0;  ///< inclusive; SIZE_MAX: no upper bound
  ProtoKind kind = ProtoKind::Short;
  std::vector<size_t> lanes;  ///< endpoint lane indices
  double cost_c = 0;          ///< time(n) = cost_c + cost_m * n in this range
  double cost_m = 0;
  bool forced = false;  ///< a forced threshold, not the model, decided it
};

/// The protocol of every message size for one operation.
class MC_INTERNAL ProtoTable {
 public:
  ProtoTable() = default;
  ProtoTable(Op op, std::vector<ProtoRange> ranges) : op_(op), ranges_(std::move(ranges)) {}

  Op op() const { return op_; }
  const std::vector<ProtoRange>& ranges() const { return ranges_; }
  /// The range holding `size`, or null when no protocol can move it. O(log n);
  /// small sizes (the first range) without a search.
  const ProtoRange* lookup(size_t size) const {
    if (!ranges_.empty() && size <= ranges_[0].max) {
      return ranges_[0].min <= size ? &ranges_[0] : nullptr;
    }
    return search(size);
  }
  /// One line per range: "put 0..256 short lane 0 (1.20us + 1.00ns/B)".
  void print(std::ostream& os) const;

 private:
  const ProtoRange* search(size_t size) const;

  Op op_ = Op::Put;
  std::vector<ProtoRange> ranges_;  ///< sorted, contiguous from 0
};

/// Builds the table from the model: for each size the cheapest protocol
/// valid there (cost c + m*n; see proto_select.cc for each protocol's terms),
/// within the forced thresholds when they leave a protocol. Pure.
MC_INTERNAL ProtoTable select_protocols(const ProtoSelectParams& params);

}  // namespace mc::ucp::proto
