// SPDX-License-Identifier: Apache-2.0
// The memory-type range cache of cuda_copy: pure logic, runs everywhere.
#include <gtest/gtest.h>

#include "uct/cuda/cuda_copy/mem_type_cache.h"

namespace mc::uct::cuda {
namespace {

const MemTypeInfo kDev0{MemType::Cuda, 0};
const MemTypeInfo kDev1{MemType::Cuda, 1};
const MemTypeInfo kManaged{MemType::CudaManaged, 0};

TEST(MemTypeCache, LookupNeedsTheWholeRangeInsideOneEntry) {
  MemTypeCache c;
  c.insert(0x1000, 0x1000, kDev0);
  EXPECT_EQ(c.lookup(0x1000, 0x1000), kDev0);
  EXPECT_EQ(c.lookup(0x1800, 0x800), kDev0);
  EXPECT_EQ(c.lookup(0x1fff, 1), kDev0);
  EXPECT_FALSE(c.lookup(0x1fff, 2));  // runs past the end
  EXPECT_FALSE(c.lookup(0x0fff, 2));  // starts before
  EXPECT_FALSE(c.lookup(0x2000, 1));  // one past the end
  EXPECT_FALSE(c.lookup(0x0, 0x10));
  EXPECT_EQ(c.hits(), 3u);
  EXPECT_EQ(c.misses(), 4u);
}

TEST(MemTypeCache, AdjacentRangesStayApartAndASpanningLookupMisses) {
  MemTypeCache c;
  c.insert(0x1000, 0x1000, kDev0);
  c.insert(0x2000, 0x1000, kDev1);
  EXPECT_EQ(c.size(), 2u);
  EXPECT_EQ(c.lookup(0x2000, 0x10), kDev1);
  EXPECT_EQ(c.lookup(0x1ff0, 0x10), kDev0);
  EXPECT_FALSE(c.lookup(0x1ff0, 0x20));  // spans both: the driver must decide
}

TEST(MemTypeCache, EraseInvalidatesEveryOverlappingRange) {
  MemTypeCache c;
  c.insert(0x1000, 0x1000, kDev0);
  c.insert(0x3000, 0x1000, kDev1);
  c.insert(0x5000, 0x1000, kManaged);
  c.erase(0x1800, 0x2000);  // overlaps the first two, not the third
  EXPECT_FALSE(c.lookup(0x1000, 1));
  EXPECT_FALSE(c.lookup(0x3000, 1));
  EXPECT_EQ(c.lookup(0x5000, 1), kManaged);
  EXPECT_EQ(c.size(), 1u);
  c.erase(0x5000, 0x1000);
  EXPECT_EQ(c.size(), 0u);
  c.erase(0x5000, 0);  // nothing to do
}

TEST(MemTypeCache, InsertReplacesWhatItOverlaps) {
  MemTypeCache c;
  c.insert(0x1000, 0x1000, kDev0);
  c.insert(0x1800, 0x1000, kDev1);  // reused address, another allocation
  EXPECT_FALSE(c.lookup(0x1000, 1));
  EXPECT_EQ(c.lookup(0x1800, 0x1000), kDev1);
  EXPECT_EQ(c.size(), 1u);
}

TEST(MemTypeCache, DegenerateRangesAreIgnored) {
  MemTypeCache c;
  c.insert(0x1000, 0, kDev0);
  c.insert(UINTPTR_MAX - 4, 16, kDev0);  // wraps
  EXPECT_EQ(c.size(), 0u);
  c.insert(UINTPTR_MAX - 31, 16, kDev0);
  EXPECT_EQ(c.lookup(UINTPTR_MAX - 31, 16), kDev0);
  EXPECT_FALSE(c.lookup(UINTPTR_MAX - 20, 100));  // wraps: never a hit
  c.erase(UINTPTR_MAX - 20, 100);                 // wrapping erase clamps to the top
  EXPECT_EQ(c.size(), 0u);
}

}  // namespace
}  // namespace mc::uct::cuda
