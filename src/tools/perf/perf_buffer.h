// SPDX-License-Identifier: Apache-2.0
// AlignedBuffer: the host memory of every mc_perftest test that does not
// take it from a memory domain (UCT and UCP --alloc heap|pages, the
// Transfer Engine tests), so a ceiling and the run it bounds can have the
// same kind of pages.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "tools/perf/perf_params.h"

namespace mc::perf {

/// Page-aligned anonymous memory. With Alloc::Pages, the kernel's base
/// pages as they come (what the Transfer Engine tests use by default, as
/// Mooncake's bench does); otherwise, from one transparent huge page up,
/// aligned to it and advised MADV_HUGEPAGE before the first touch
/// (ucx_perftest's "thp" allocation). `fill`: every byte written with it
/// (the pages touched) before the buffer is returned; none: left
/// untouched, zero when first read.
class AlignedBuffer {
 public:
  AlignedBuffer(size_t length, Alloc alloc, std::optional<uint8_t> fill);
  ~AlignedBuffer();
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  /// Null when the memory could not be mapped.
  uint8_t* data() const { return data_; }
  size_t length() const { return length_; }
  /// Whether the buffer was advised MADV_HUGEPAGE.
  bool huge() const { return huge_; }

 private:
  uint8_t* data_ = nullptr;
  size_t length_ = 0;
  void* map_ = nullptr;  ///< the whole mapping, of map_length_ bytes
  size_t map_length_ = 0;
  bool huge_ = false;
};

}  // namespace mc::perf
