// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: configuration values and files. The first byte picks a
// parser, the rest is the text; a value that parses must format to text
// that parses to the same value. The whole input is also read as a config
// file.
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "ucs/config/parser.h"
#include "ucs/config/sources.h"

namespace cfg = mc::ucs::config;

namespace {

template <typename T>
void round_trip(const cfg::Parser<T>& parser, std::string_view text) {
  T value{};
  if (parser.parse(text, &value) != mc::ucs::Status::Ok) return;
  T again{};
  const std::string formatted = parser.format(value);
  if (parser.parse(formatted, &again) != mc::ucs::Status::Ok) std::abort();
  if (parser.format(again) != formatted) std::abort();
}

enum class Color { Red, Green };

const std::vector<std::function<void(std::string_view)>>& checks() {
  static const std::vector<std::function<void(std::string_view)>> all = {
      [](std::string_view t) { round_trip(cfg::bool_parser(), t); },
      [](std::string_view t) { round_trip(cfg::string_parser(), t); },
      [](std::string_view t) { round_trip(cfg::int_parser(-1000, 1000), t); },
      [](std::string_view t) { round_trip(cfg::uint_parser(), t); },
      [](std::string_view t) { round_trip(cfg::size_parser(), t); },
      [](std::string_view t) { round_trip(cfg::time_parser(), t); },
      [](std::string_view t) { round_trip(cfg::bandwidth_parser(), t); },
      [](std::string_view t) { round_trip(cfg::double_parser(0.0, 1.0), t); },
      [](std::string_view t) { round_trip(cfg::allow_list_parser(), t); },
      [](std::string_view t) { round_trip(cfg::string_list_parser(), t); },
      [](std::string_view t) {
        round_trip(cfg::enum_parser<Color>({{"red", Color::Red}, {"green", Color::Green}}), t);
      },
      [](std::string_view t) { round_trip(cfg::auto_parser(cfg::size_parser()), t); },
      [](std::string_view t) { round_trip(cfg::key_value_parser(cfg::size_parser()), t); },
  };
  return all;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  checks()[data[0] % checks().size()](text);
  std::string error;
  auto sources = cfg::Sources::from({}, {{"fuzz.conf", std::string(text)}}, &error);
  if (!sources.ok() && error.empty()) std::abort();
  return 0;
}
