// SPDX-License-Identifier: Apache-2.0
// Bounds-checked little-endian encoding for everything that crosses a process
// boundary: packed addresses, remote keys, wire headers.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace mc::ucs {

/// The `n` (1 to 8) bytes at `p` as a little-endian number: one load on a
/// little-endian host, where `n` is a constant once inlined.
inline uint64_t load_le(const uint8_t* p, size_t n) {
  uint64_t v = 0;
  if constexpr (std::endian::native == std::endian::little) {
    std::memcpy(&v, p, n);
  } else {
    for (size_t i = 0; i < n; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  }
  return v;
}

/// Writes the low `n` (1 to 8) bytes of `v` at `p`, little-endian: one store
/// on a little-endian host.
inline void store_le(uint8_t* p, uint64_t v, size_t n) {
  if constexpr (std::endian::native == std::endian::little) {
    std::memcpy(p, &v, n);
  } else {
    for (size_t i = 0; i < n; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
  }
}

/// Appends little-endian fields to a byte vector.
class WireWriter {
 public:
  explicit WireWriter(std::vector<uint8_t>* out) : out_(out) {}

  void u8(uint8_t v) { out_->push_back(v); }
  void u16(uint16_t v) { put(v, 2); }
  void u32(uint32_t v) { put(v, 4); }
  void u64(uint64_t v) { put(v, 8); }
  void bytes(const void* data, size_t len) {
    const auto* p = static_cast<const uint8_t*>(data);
    out_->insert(out_->end(), p, p + len);
  }
  /// A string as u16 length + bytes; longer strings are cut to 65535 bytes.
  void str(std::string_view s) {
    const size_t n = s.size() < 0xffff ? s.size() : 0xffff;
    u16(static_cast<uint16_t>(n));
    bytes(s.data(), n);
  }
  /// A byte blob as u32 length + bytes.
  void blob(std::span<const uint8_t> b) {
    u32(static_cast<uint32_t>(b.size()));
    bytes(b.data(), b.size());
  }

 private:
  void put(uint64_t v, size_t n) {
    out_->resize(out_->size() + n);
    store_le(out_->data() + out_->size() - n, v, n);
  }
  std::vector<uint8_t>* out_;
};

/// Reads little-endian fields; every read checks the remaining length. After
/// the first failed read, ok() is false and every later read fails too, so a
/// decoder can read all fields and check once.
class WireReader {
 public:
  explicit WireReader(std::span<const uint8_t> in) : in_(in) {}

  bool ok() const { return ok_; }
  size_t remaining() const { return ok_ ? in_.size() - pos_ : 0; }
  bool at_end() const { return ok_ && pos_ == in_.size(); }

  uint8_t u8() { return static_cast<uint8_t>(get(1)); }
  uint16_t u16() { return static_cast<uint16_t>(get(2)); }
  uint32_t u32() { return static_cast<uint32_t>(get(4)); }
  uint64_t u64() { return get(8); }
  /// `len` bytes, or an empty span (and !ok()) when fewer remain.
  std::span<const uint8_t> bytes(size_t len) {
    if (!take(len)) return {};
    return in_.subspan(pos_ - len, len);
  }
  std::string str() {
    const uint16_t n = u16();
    auto b = bytes(n);
    return std::string(reinterpret_cast<const char*>(b.data()), b.size());
  }
  std::span<const uint8_t> blob() { return bytes(u32()); }

 private:
  bool take(size_t n) {
    if (!ok_ || in_.size() - pos_ < n) {
      ok_ = false;
      return false;
    }
    pos_ += n;
    return true;
  }
  uint64_t get(size_t n) { return take(n) ? load_le(in_.data() + pos_ - n, n) : 0; }

  std::span<const uint8_t> in_;
  size_t pos_ = 0;
  bool ok_ = true;
};

}  // namespace mc::ucs
