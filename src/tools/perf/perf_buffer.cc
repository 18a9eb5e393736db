// SPDX-License-Identifier: Apache-2.0
// AlignedBuffer: anonymous mappings, huge-page aligned when asked.
#include "tools/perf/perf_buffer.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <string>

#include "ucs/sys/sys.h"

namespace mc::perf {

namespace {

// The transparent huge page size, 0 when THP is off or unknown.
size_t thp_size() {
  static const size_t size = [] {
    std::ifstream enabled("/sys/kernel/mm/transparent_hugepage/enabled");
    std::string mode;
    if (!std::getline(enabled, mode) || mode.find("[never]") != std::string::npos) return size_t{0};
    std::ifstream in("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size");
    size_t value = 0;
    return (in >> value) ? value : size_t{0};
  }();
  return size;
}

}  // namespace

AlignedBuffer::AlignedBuffer(size_t length, Alloc alloc, std::optional<uint8_t> fill)
    : length_(length) {
  const size_t thp = alloc == Alloc::Pages ? 0 : thp_size();
  huge_ = thp && length >= thp;
  const size_t align = huge_ ? thp : ucs::page_size();
  const size_t rounded = (std::max<size_t>(length, 1) + align - 1) / align * align;
  // A huge-page aligned start: map one huge page more and use its aligned part.
  map_length_ = rounded + (huge_ ? align : 0);
  void* p = mmap(nullptr, map_length_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return;
  map_ = p;
  const uintptr_t start = (reinterpret_cast<uintptr_t>(p) + align - 1) / align * align;
  data_ = reinterpret_cast<uint8_t*>(start);
  if (huge_) (void)madvise(data_, rounded, MADV_HUGEPAGE);  // before the first touch
  if (fill) std::memset(data_, *fill, rounded);
}

AlignedBuffer::~AlignedBuffer() {
  if (map_) munmap(map_, map_length_);
}

}  // namespace mc::perf
