// SPDX-License-Identifier: Apache-2.0
// Base64 encode and strict decode.
#include "ucp/metadata/etcd/base64.h"

#include <cstdint>

namespace mc::metadata::etcd {

namespace {

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int sextet(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

}  // namespace

std::string base64_encode(std::string_view in) {
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 3 <= in.size(); i += 3) {
    const uint32_t v = static_cast<uint8_t>(in[i]) << 16 | static_cast<uint8_t>(in[i + 1]) << 8 |
                       static_cast<uint8_t>(in[i + 2]);
    out.push_back(kAlphabet[v >> 18]);
    out.push_back(kAlphabet[(v >> 12) & 63]);
    out.push_back(kAlphabet[(v >> 6) & 63]);
    out.push_back(kAlphabet[v & 63]);
  }
  const size_t rest = in.size() - i;
  if (rest > 0) {
    uint32_t v = static_cast<uint8_t>(in[i]) << 16;
    if (rest == 2) v |= static_cast<uint8_t>(in[i + 1]) << 8;
    out.push_back(kAlphabet[v >> 18]);
    out.push_back(kAlphabet[(v >> 12) & 63]);
    out.push_back(rest == 2 ? kAlphabet[(v >> 6) & 63] : '=');
    out.push_back('=');
  }
  return out;
}

bool base64_decode(std::string_view in, std::string* out, std::string* error) {
  out->clear();
  if (in.size() % 4 != 0) {
    *error = "base64 text of " + std::to_string(in.size()) + " characters (not a multiple of 4)";
    return false;
  }
  out->reserve(in.size() / 4 * 3);
  for (size_t i = 0; i < in.size(); i += 4) {
    const bool last = i + 4 == in.size();
    int pad = 0;
    uint32_t v = 0;
    for (size_t j = 0; j < 4; ++j) {
      const char c = in[i + j];
      if (c == '=' && last && j >= 2 && (j == 3 || in[i + 3] == '=')) {
        ++pad;
        v <<= 6;
        continue;
      }
      const int s = sextet(c);
      if (s < 0 || pad > 0) {
        *error = "invalid base64 character at position " + std::to_string(i + j);
        return false;
      }
      v = v << 6 | static_cast<uint32_t>(s);
    }
    out->push_back(static_cast<char>(v >> 16));
    if (pad < 2) out->push_back(static_cast<char>((v >> 8) & 0xff));
    if (pad < 1) out->push_back(static_cast<char>(v & 0xff));
  }
  return true;
}

}  // namespace mc::metadata::etcd
