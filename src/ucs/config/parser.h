// SPDX-License-Identifier: Apache-2.0
// Typed parsers for configuration values: text <-> value, with the syntax a
// user is shown when a value is rejected.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ucs/status/status.h"

namespace mc::ucs::config {

/// Time values are kept in nanoseconds.
using Duration = std::chrono::nanoseconds;

/// A list that can be negated: "tcp,sm" allows those, "^cuda_copy" allows all
/// but those. An empty list with negate == true allows everything ("all").
struct AllowList {
  bool negate = true;
  std::vector<std::string> items;

  /// Whether `name` passes the list.
  bool allows(std::string_view name) const;
  bool operator==(const AllowList&) const = default;
};

/// Turns text into a T and back. `parse` returns InvalidParam and leaves `*out`
/// untouched when the text is not valid; `syntax` says what is accepted.
template <typename T>
struct Parser {
  std::function<Status(std::string_view text, T* out)> parse;
  std::function<std::string(const T& value)> format;
  std::string syntax;
};

Parser<bool> bool_parser();
Parser<std::string> string_parser();
Parser<int64_t> int_parser(int64_t min = INT64_MIN, int64_t max = INT64_MAX);
/// Unsigned counts; "inf" is the maximum value.
Parser<uint64_t> uint_parser(uint64_t min = 0, uint64_t max = UINT64_MAX);
/// Byte sizes with binary units: 4096, 64k, 1m, 2g, 1t, "inf" (SIZE_MAX).
Parser<size_t> size_parser(size_t min = 0, size_t max = SIZE_MAX);
/// Times: 10ns, 5us, 10ms, 5s, 2m, 1h; a bare number is seconds; "inf".
Parser<Duration> time_parser();
/// Bandwidths in bytes per second: 100MBs, 1.5GB/s, 10Gbps (bits), 1000.
Parser<double> bandwidth_parser();
/// Floating-point numbers within [min, max].
Parser<double> double_parser(double min, double max);
Parser<AllowList> allow_list_parser();
/// Comma-separated strings without negation: "a,b,c".
Parser<std::vector<std::string>> string_list_parser();

/// One of `names`, case-insensitive.
template <typename E>
Parser<E> enum_parser(std::vector<std::pair<std::string, E>> names);

/// "auto" or a value of `inner`.
template <typename T>
Parser<std::optional<T>> auto_parser(Parser<T> inner);

/// "key:value,key:value" with values parsed by `inner`, e.g. host:512k,cuda:4m.
template <typename T>
Parser<std::map<std::string, T>> key_value_parser(Parser<T> inner);

// --- helpers for the templates above --------------------------------------

/// Lower-cased copy.
std::string to_lower(std::string_view s);
/// Splits on `sep`, trimming spaces; empty input gives an empty list.
std::vector<std::string> split_list(std::string_view text, char sep = ',');
/// Trims ASCII blanks at both ends.
std::string_view trim(std::string_view s);

template <typename E>
Parser<E> enum_parser(std::vector<std::pair<std::string, E>> names) {
  std::string syntax = "one of [";
  for (size_t i = 0; i < names.size(); ++i) {
    syntax += (i ? "|" : "") + names[i].first;
  }
  syntax += "]";
  Parser<E> p;
  p.syntax = syntax;
  p.parse = [names](std::string_view text, E* out) {
    const std::string lower = to_lower(trim(text));
    for (const auto& [name, value] : names) {
      if (to_lower(name) == lower) {
        *out = value;
        return Status::Ok;
      }
    }
    return Status::InvalidParam;
  };
  p.format = [names](const E& value) {
    for (const auto& [name, v] : names) {
      if (v == value) return name;
    }
    return std::string("?");
  };
  return p;
}

template <typename T>
Parser<std::optional<T>> auto_parser(Parser<T> inner) {
  Parser<std::optional<T>> p;
  p.syntax = "auto, or " + inner.syntax;
  p.parse = [inner](std::string_view text, std::optional<T>* out) {
    if (to_lower(trim(text)) == "auto") {
      *out = std::nullopt;
      return Status::Ok;
    }
    T value{};
    MC_RETURN_IF_ERROR(inner.parse(text, &value));
    *out = std::move(value);
    return Status::Ok;
  };
  p.format = [inner](const std::optional<T>& value) {
    return value ? inner.format(*value) : std::string("auto");
  };
  return p;
}

template <typename T>
Parser<std::map<std::string, T>> key_value_parser(Parser<T> inner) {
  Parser<std::map<std::string, T>> p;
  p.syntax = "comma-separated key:value pairs, each value " + inner.syntax;
  p.parse = [inner](std::string_view text, std::map<std::string, T>* out) {
    std::map<std::string, T> result;
    for (const std::string& item : split_list(text)) {
      const size_t colon = item.find(':');
      if (colon == std::string::npos || colon == 0) return Status::InvalidParam;
      std::string key(trim(std::string_view(item).substr(0, colon)));
      T value{};
      MC_RETURN_IF_ERROR(inner.parse(std::string_view(item).substr(colon + 1), &value));
      if (!result.emplace(std::move(key), std::move(value)).second) {
        return Status::InvalidParam;  // a key given twice is a typo, not a choice
      }
    }
    *out = std::move(result);
    return Status::Ok;
  };
  p.format = [inner](const std::map<std::string, T>& value) {
    std::string s;
    for (const auto& [k, v] : value) {
      s += (s.empty() ? "" : ",") + k + ":" + inner.format(v);
    }
    return s;
  };
  return p;
}

}  // namespace mc::ucs::config
