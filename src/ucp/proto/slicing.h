// SPDX-License-Identifier: Apache-2.0
// Slicing arithmetic of multi-lane transfers: cutting a transfer into slices
// with the tail merged, and sharing slices among lanes by bandwidth. Pure.
#pragma once

#include <cstddef>
#include <vector>

#include "ucs/sys/visibility.h"

namespace mc::ucp::proto {

/// A piece of a transfer: bytes [offset, offset + length) on lane `lane`
/// (an index into the lanes of the transfer).
struct Slice {
  size_t offset = 0;
  size_t length = 0;
  size_t lane = 0;
  bool operator==(const Slice&) const = default;
};

/// Cuts [0, total) into slices of `slice_size` bytes; a last slice shorter
/// than slice_size / fragment_ratio is merged into the one before it. No
/// slice for total == 0; `slice_size` and `fragment_ratio` must be > 0.
MC_INTERNAL std::vector<Slice> cut_slices(size_t total, size_t slice_size, size_t fragment_ratio);

/// Assigns each slice to the lane where it would finish first, given the
/// bytes already assigned: lane shares follow `bandwidths` (each > 0).
/// Deterministic: ties go to the lower lane index.
MC_INTERNAL void assign_lanes(std::vector<Slice>* slices, const std::vector<double>& bandwidths);

}  // namespace mc::ucp::proto
