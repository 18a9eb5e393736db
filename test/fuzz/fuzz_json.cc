// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: the JSON reader (ucs/datastruct/json) under tight limits.
// A value that parses must write to text that parses to the same value.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "ucs/datastruct/json.h"

namespace json = mc::ucs::json;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  json::Limits limits;
  limits.max_depth = 16;
  limits.max_size = 1 << 16;
  std::string error;
  auto value = json::parse(text, &error, limits);
  if (!value.ok()) {
    if (error.empty()) std::abort();
    return 0;
  }
  const std::string written = json::write(*value);
  auto again = json::parse(written, &error);
  if (!again.ok() || !(*again == *value)) std::abort();
  return 0;
}
