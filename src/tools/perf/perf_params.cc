// SPDX-License-Identifier: Apache-2.0
// Params: names, wire form, data patterns.
#include "tools/perf/perf_params.h"

#include <cstring>
#include <numeric>

#include "ucs/datastruct/wire.h"
#include "ucs/log/log.h"

namespace mc::perf {

namespace {

constexpr uint32_t kMagic = 0x5450434d;  // "MCPT"
constexpr uint16_t kVersion = 3;

// splitmix64: a different 8-byte word for every index and seed.
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Word `w` of the pattern, stored little-endian: byte i is word i / 8, byte i % 8.
uint64_t pattern_word(uint64_t seed, size_t w) {
  return mix(seed ^ (w * 0x2545f4914f6cdd1dull));
}

uint8_t pattern_byte(uint64_t seed, size_t i) {
  return static_cast<uint8_t>(pattern_word(seed, i / 8) >> (8 * (i % 8)));
}

}  // namespace

const char* layout_name(Layout layout) {
  switch (layout) {
    case Layout::Short: return "short";
    case Layout::Bcopy: return "bcopy";
    case Layout::Zcopy: return "zcopy";
  }
  return "?";
}

const char* alloc_name(Alloc alloc) {
  switch (alloc) {
    case Alloc::Md: return "md";
    case Alloc::Heap: return "heap";
    case Alloc::Pages: return "pages";
  }
  return "?";
}

const char* mem_kind_name(MemKind kind) {
  return kind == MemKind::Host ? "host" : "cuda";
}

size_t Params::message_size() const {
  return std::accumulate(sizes.begin(), sizes.end(), 0ul);
}

uint64_t Params::slots() const {
  const size_t len = message_size();
  return len == 0 || footprint <= len ? 1 : footprint / len;
}

std::vector<uint8_t> encode_params(const Params& p) {
  std::vector<uint8_t> out;
  ucs::WireWriter w(&out);
  w.u32(kMagic);
  w.u16(kVersion);
  w.str(p.test);
  w.u32(static_cast<uint32_t>(p.sizes.size()));
  for (size_t s : p.sizes) w.u64(s);
  w.u64(p.iters);
  w.u64(p.warmup);
  w.u32(p.window);
  w.u32(p.fc_window);
  w.u8(p.layout ? static_cast<uint8_t>(*p.layout) + 1 : 0);
  w.u8(static_cast<uint8_t>(p.send_mem));
  w.u8(static_cast<uint8_t>(p.recv_mem));
  w.u32(p.threads);
  w.u32(static_cast<uint32_t>(p.percentile_rank * 1000));
  w.str(p.tl);
  w.str(p.dev);
  w.u8(static_cast<uint8_t>(p.alloc));
  w.u64(p.seed);
  w.u64(p.footprint);
  return out;
}

Result<Params> decode_params(std::span<const uint8_t> wire) {
  ucs::WireReader r(wire);
  if (r.u32() != kMagic) {
    MC_LOG(error) << "the peer is not mc_perftest (bad magic in its parameters)";
    return Status::BadData;
  }
  if (const uint16_t v = r.u16(); v != kVersion) {
    MC_LOG(error) << "the peer's mc_perftest speaks protocol version " << v << ", this one "
                  << kVersion;
    return Status::BadData;
  }
  Params p;
  p.test = r.str();
  const uint32_t n = r.u32();
  if (n == 0 || n > 1024) return Status::BadData;
  p.sizes.clear();
  for (uint32_t i = 0; i < n && r.ok(); ++i) p.sizes.push_back(r.u64());
  p.iters = r.u64();
  p.warmup = r.u64();
  p.window = r.u32();
  p.fc_window = r.u32();
  const uint8_t layout = r.u8();
  if (layout > 3) return Status::BadData;
  if (layout) p.layout = static_cast<Layout>(layout - 1);
  p.send_mem = static_cast<MemKind>(r.u8());
  p.recv_mem = static_cast<MemKind>(r.u8());
  p.threads = r.u32();
  p.percentile_rank = r.u32() / 1000.0;
  p.tl = r.str();
  p.dev = r.str();
  const uint8_t alloc = r.u8();
  if (alloc > static_cast<uint8_t>(Alloc::Pages)) return Status::BadData;
  p.alloc = static_cast<Alloc>(alloc);
  p.seed = r.u64();
  p.footprint = r.u64();
  if (p.footprint > kMaxFootprint) {
    MC_LOG(error) << "the peer's --footprint " << p.footprint << " is above " << kMaxFootprint;
    return Status::BadData;
  }
  if (!r.at_end()) {
    MC_LOG(error) << "malformed parameters from the peer (" << wire.size() << " bytes)";
    return Status::BadData;
  }
  return p;
}

// One mixed word per 8 bytes: filling and checking run at memory speed.
void pattern_fill(uint8_t* buffer, size_t length, uint64_t seed) {
  size_t i = 0;
  for (; i + 8 <= length; i += 8) {
    const uint64_t word = pattern_word(seed, i / 8);
    std::memcpy(buffer + i, &word, 8);
  }
  for (; i < length; ++i) buffer[i] = pattern_byte(seed, i);
}

ptrdiff_t pattern_check(const uint8_t* buffer, size_t length, uint64_t seed) {
  size_t i = 0;
  for (; i + 8 <= length; i += 8) {
    const uint64_t word = pattern_word(seed, i / 8);
    if (std::memcmp(buffer + i, &word, 8) != 0) break;
  }
  for (; i < length; ++i) {
    if (buffer[i] != pattern_byte(seed, i)) return static_cast<ptrdiff_t>(i);
  }
  return -1;
}

uint64_t pattern_final_seed(uint64_t seed) {
  constexpr uint64_t kFinalSeedMix = 0xd6e8feb86659fd93ull;
  uint8_t first = 0, candidate = 0;
  pattern_fill(&first, 1, seed);
  uint64_t s = seed ^ kFinalSeedMix;
  for (pattern_fill(&candidate, 1, s); candidate == first; pattern_fill(&candidate, 1, ++s)) {
  }
  return s;
}

}  // namespace mc::perf
