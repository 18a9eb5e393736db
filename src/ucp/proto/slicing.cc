// SPDX-License-Identifier: Apache-2.0
// Slicing arithmetic.
#include "ucp/proto/slicing.h"

namespace mc::ucp::proto {

std::vector<Slice> cut_slices(size_t total, size_t slice_size, size_t fragment_ratio) {
  std::vector<Slice> slices;
  if (total == 0 || slice_size == 0 || fragment_ratio == 0) return slices;
  for (size_t offset = 0; offset < total; offset += slice_size) {
    const size_t length = total - offset < slice_size ? total - offset : slice_size;
    slices.push_back(Slice{offset, length, 0});
  }
  const size_t min_tail = slice_size / fragment_ratio;
  if (slices.size() >= 2 && slices.back().length < min_tail) {
    const size_t tail = slices.back().length;
    slices.pop_back();
    slices.back().length += tail;
  }
  return slices;
}

void assign_lanes(std::vector<Slice>* slices, const std::vector<double>& bandwidths) {
  if (bandwidths.empty()) return;
  std::vector<double> bytes(bandwidths.size(), 0.0);
  for (Slice& s : *slices) {
    size_t best = 0;
    double best_finish = 0;
    for (size_t l = 0; l < bandwidths.size(); ++l) {
      const double finish = (bytes[l] + static_cast<double>(s.length)) / bandwidths[l];
      if (l == 0 || finish < best_finish) {
        best = l;
        best_finish = finish;
      }
    }
    s.lane = best;
    bytes[best] += static_cast<double>(s.length);
  }
}

}  // namespace mc::ucp::proto
