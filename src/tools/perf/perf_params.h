// SPDX-License-Identifier: Apache-2.0
// The parameters of one benchmark run, shared by every test family (UCT now,
// UCP and Transfer Engine later), and their wire form: the client sends them
// to the server, which runs the same test with them (as ucx_perftest does).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ucs/status/status.h"

namespace mc::perf {

using ucs::Result;
using ucs::Status;

/// Sender-side data layout of UCT tests (-D).
enum class Layout : uint8_t { Short, Bcopy, Zcopy };
const char* layout_name(Layout layout);

/// Where tests take their buffers from (--alloc).
enum class Alloc : uint8_t {
  Md,     ///< the md's mem_alloc when it has one (as ucx_perftest), else heap
  Heap,   ///< page-aligned memory registered with mem_reg, huge-page advised (AlignedBuffer)
  Pages,  ///< the same on base pages, not advised (the Transfer Engine tests' default)
};
const char* alloc_name(Alloc alloc);

/// Memory the buffers live in (-m).
enum class MemKind : uint8_t { Host, Cuda };
const char* mem_kind_name(MemKind kind);

/// What one run does. Defaults are ucx_perftest's.
struct Params {
  std::string test;                  ///< canonical test name (-t)
  std::vector<size_t> sizes{8};      ///< -s: scatter-gather list; a message is their sum
  uint64_t iters = 1000000;          ///< -n: measured iterations
  uint64_t warmup = 10000;           ///< -w: iterations run before the clock starts
  unsigned window = 1;               ///< -O: operations in flight (bandwidth tests)
  unsigned fc_window = 127;          ///< -W: active messages ahead of the receiver's acks
  std::optional<Layout> layout;      ///< -D; empty: the test's default
  MemKind send_mem = MemKind::Host;  ///< -m <send>[,<recv>]
  MemKind recv_mem = MemKind::Host;
  unsigned threads = 1;           ///< -T
  double percentile_rank = 50.0;  ///< -R
  std::string tl;                 ///< -x
  std::string dev;                ///< -d
  Alloc alloc = Alloc::Md;        ///< --alloc
  uint64_t seed = 0;              ///< data pattern seed, chosen by the client
  /// --footprint: bytes of buffer a bandwidth test of put or get cycles
  /// through on each side, message after message (0: one message's worth,
  /// every message from and to the same bytes, as ucx_perftest).
  uint64_t footprint = 0;

  /// Bytes in one message: the sum of `sizes`.
  size_t message_size() const;
  /// Messages that fit in the footprint side by side (at least 1): message
  /// i of a stream is at offset (i % slots()) x message_size().
  uint64_t slots() const;
  /// Iterations including the warm-up.
  uint64_t total_iters() const { return iters + warmup; }
};

/// The largest --footprint: 64 GiB.
inline constexpr uint64_t kMaxFootprint = uint64_t{1} << 36;

/// The client's parameters as sent to the server.
/// Layout (little-endian): u32 magic "MCPT" | u16 version | fields in
/// declaration order (strings u16 length + bytes, sizes u32 count + u64 each,
/// enums u8).
std::vector<uint8_t> encode_params(const Params& params);

/// BadData for input that is truncated, of another tool or of another version.
Result<Params> decode_params(std::span<const uint8_t> wire);

/// The data pattern of `seed`: byte i of a buffer filled by pattern_fill().
void pattern_fill(uint8_t* buffer, size_t length, uint64_t seed);

/// Index of the first byte of `buffer` that differs from the pattern of
/// `seed`, or -1 when all `length` bytes match.
ptrdiff_t pattern_check(const uint8_t* buffer, size_t length, uint64_t seed);

/// The pattern seed of the last message of a run: another seed, whose first
/// byte differs from the first byte of `seed`'s, so a receiver tells the
/// last message from the others by its first bytes.
uint64_t pattern_final_seed(uint64_t seed);

/// The server's pattern seed is the client's (Params::seed) mixed with this.
inline constexpr uint64_t kServerSeedMix = 0x9e3779b97f4a7c15ull;

}  // namespace mc::perf
