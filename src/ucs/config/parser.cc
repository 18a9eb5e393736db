// SPDX-License-Identifier: Apache-2.0
// Parsers for the scalar and list value types of configuration tables.
#include "ucs/config/parser.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>

namespace mc::ucs::config {

std::string to_lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string_view trim(std::string_view s) {
  const char* blanks = " \t\r\n";
  const size_t begin = s.find_first_not_of(blanks);
  if (begin == std::string_view::npos) return {};
  const size_t end = s.find_last_not_of(blanks);
  return s.substr(begin, end - begin + 1);
}

std::vector<std::string> split_list(std::string_view text, char sep) {
  std::vector<std::string> items;
  if (trim(text).empty()) return items;
  size_t start = 0;
  while (true) {
    const size_t pos = text.find(sep, start);
    items.emplace_back(trim(text.substr(start, pos - start)));
    if (pos == std::string_view::npos) break;
    start = pos + 1;
  }
  return items;
}

bool AllowList::allows(std::string_view name) const {
  const bool listed = std::find(items.begin(), items.end(), name) != items.end();
  return negate ? !listed : listed;
}

namespace {

// Parses a leading non-negative decimal number (digits and one optional
// fraction); returns the rest of the text as the unit.
bool split_number(std::string_view text, double* number, std::string_view* unit,
                  bool exponent = false) {
  text = trim(text);
  size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) {
    ++i;
  }
  if (i == 0) return false;
  // An exponent ("7.2e+07"), where format_double() writes one (bandwidths):
  // what mc_info -c prints must read back. Sizes stay plain ("1e3" is refused).
  if (exponent && i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    size_t j = i + 1;
    if (j < text.size() && (text[j] == '+' || text[j] == '-')) ++j;
    if (j < text.size() && std::isdigit(static_cast<unsigned char>(text[j]))) {
      while (j < text.size() && std::isdigit(static_cast<unsigned char>(text[j]))) ++j;
      i = j;
    }
  }
  const std::string digits(text.substr(0, i));
  char* end = nullptr;
  *number = std::strtod(digits.c_str(), &end);
  if (end != digits.c_str() + digits.size() || !std::isfinite(*number)) return false;
  *unit = trim(text.substr(i));
  return true;
}

std::string format_double(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.6g", v);
  return buf;
}

}  // namespace

Parser<bool> bool_parser() {
  Parser<bool> p;
  p.syntax = "a boolean [y|n|yes|no|on|off|1|0|true|false]";
  p.parse = [](std::string_view text, bool* out) {
    const std::string v = to_lower(trim(text));
    if (v == "y" || v == "yes" || v == "on" || v == "1" || v == "true") {
      *out = true;
    } else if (v == "n" || v == "no" || v == "off" || v == "0" || v == "false") {
      *out = false;
    } else {
      return Status::InvalidParam;
    }
    return Status::Ok;
  };
  p.format = [](const bool& v) { return std::string(v ? "y" : "n"); };
  return p;
}

Parser<std::string> string_parser() {
  Parser<std::string> p;
  p.syntax = "a string";
  p.parse = [](std::string_view text, std::string* out) {
    *out = std::string(trim(text));
    return Status::Ok;
  };
  p.format = [](const std::string& v) { return v; };
  return p;
}

Parser<int64_t> int_parser(int64_t min, int64_t max) {
  Parser<int64_t> p;
  p.syntax = "an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]";
  p.parse = [min, max](std::string_view text, int64_t* out) {
    text = trim(text);
    int64_t v = 0;
    const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || ptr != text.data() + text.size() || text.empty()) {
      return Status::InvalidParam;
    }
    if (v < min || v > max) return Status::InvalidParam;
    *out = v;
    return Status::Ok;
  };
  p.format = [](const int64_t& v) { return std::to_string(v); };
  return p;
}

Parser<uint64_t> uint_parser(uint64_t min, uint64_t max) {
  Parser<uint64_t> p;
  p.syntax = "an unsigned integer in [" + std::to_string(min) + ", " +
             (max == UINT64_MAX ? std::string("inf") : std::to_string(max)) + "]";
  p.parse = [min, max](std::string_view text, uint64_t* out) {
    text = trim(text);
    uint64_t v = 0;
    if (to_lower(text) == "inf" && max == UINT64_MAX) {
      v = UINT64_MAX;
    } else {
      const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
      if (ec != std::errc() || ptr != text.data() + text.size() || text.empty()) {
        return Status::InvalidParam;
      }
    }
    if (v < min || v > max) return Status::InvalidParam;
    *out = v;
    return Status::Ok;
  };
  p.format = [](const uint64_t& v) {
    return v == UINT64_MAX ? std::string("inf") : std::to_string(v);
  };
  return p;
}

Parser<size_t> size_parser(size_t min, size_t max) {
  Parser<size_t> p;
  p.syntax = "a size such as 4096, 64k, 1m, 2g, 1t or inf";
  if (min != 0 || max != SIZE_MAX) {
    p.syntax += " within [" + std::to_string(min) + ", " +
                (max == SIZE_MAX ? std::string("inf") : std::to_string(max)) + "] bytes";
  }
  p.parse = [min, max](std::string_view text, size_t* out) {
    if (to_lower(trim(text)) == "inf") {
      if (max != SIZE_MAX) return Status::InvalidParam;
      *out = SIZE_MAX;
      return Status::Ok;
    }
    double number = 0;
    std::string_view unit;
    if (!split_number(text, &number, &unit)) return Status::InvalidParam;
    std::string u = to_lower(unit);
    if (u.size() > 1 && u.back() == 'b') u.pop_back();  // "64kb" == "64k"
    double mult = 1;
    if (u.empty() || u == "b") {
      mult = 1;
    } else if (u == "k") {
      mult = 1ull << 10;
    } else if (u == "m") {
      mult = 1ull << 20;
    } else if (u == "g") {
      mult = 1ull << 30;
    } else if (u == "t") {
      mult = 1ull << 40;
    } else {
      return Status::InvalidParam;
    }
    const double bytes = number * mult;
    if (bytes != std::floor(bytes) || bytes >= 18446744073709551615.0) return Status::InvalidParam;
    const auto v = static_cast<size_t>(bytes);
    if (v < min || v > max) return Status::InvalidParam;
    *out = v;
    return Status::Ok;
  };
  p.format = [](const size_t& v) {
    if (v == SIZE_MAX) return std::string("inf");
    static const char* units[] = {"", "k", "m", "g", "t"};
    size_t value = v;
    int unit = 0;
    while (value != 0 && value % 1024 == 0 && unit < 4) {
      value /= 1024;
      ++unit;
    }
    return std::to_string(value) + units[unit];
  };
  return p;
}

Parser<Duration> time_parser() {
  Parser<Duration> p;
  p.syntax = "a time such as 100ns, 10us, 10ms, 5s, 2m, 1h, or inf (a bare number is seconds)";
  p.parse = [](std::string_view text, Duration* out) {
    if (to_lower(trim(text)) == "inf") {
      *out = Duration::max();
      return Status::Ok;
    }
    double number = 0;
    std::string_view unit;
    if (!split_number(text, &number, &unit)) return Status::InvalidParam;
    const std::string u = to_lower(unit);
    double ns_per_unit = 0;
    if (u == "ns") {
      ns_per_unit = 1;
    } else if (u == "us") {
      ns_per_unit = 1e3;
    } else if (u == "ms") {
      ns_per_unit = 1e6;
    } else if (u.empty() || u == "s") {
      ns_per_unit = 1e9;
    } else if (u == "m") {
      ns_per_unit = 60e9;
    } else if (u == "h") {
      ns_per_unit = 3600e9;
    } else {
      return Status::InvalidParam;
    }
    const double ns = number * ns_per_unit;
    if (ns >= 9.2e18) return Status::InvalidParam;
    *out = Duration(static_cast<int64_t>(std::llround(ns)));
    return Status::Ok;
  };
  p.format = [](const Duration& v) {
    if (v == Duration::max()) return std::string("inf");
    const int64_t ns = v.count();
    if (ns != 0 && ns % 1000000000 == 0) return std::to_string(ns / 1000000000) + "s";
    if (ns != 0 && ns % 1000000 == 0) return std::to_string(ns / 1000000) + "ms";
    if (ns != 0 && ns % 1000 == 0) return std::to_string(ns / 1000) + "us";
    return std::to_string(ns) + "ns";
  };
  return p;
}

Parser<double> bandwidth_parser() {
  Parser<double> p;
  p.syntax = "a bandwidth such as 1000 (bytes/s), 100KBs, 12.5GB/s (bytes, 1024-based) or 100Gbps (bits, 1000-based)";
  p.parse = [](std::string_view text, double* out) {
    double number = 0;
    std::string_view unit_view;
    if (!split_number(text, &number, &unit_view, true)) return Status::InvalidParam;
    std::string unit(unit_view);
    if (unit.empty()) {
      *out = number;
      return Status::Ok;
    }
    // Bits: "bps" / "b/s" with a lower-case b; bytes: "Bs" / "B/s" / "Bps".
    bool bits = false;
    if (unit.size() >= 3 && unit.compare(unit.size() - 3, 3, "bps") == 0) {
      bits = true;
      unit.resize(unit.size() - 3);
    } else if (unit.size() >= 3 && unit.compare(unit.size() - 3, 3, "b/s") == 0) {
      bits = true;
      unit.resize(unit.size() - 3);
    } else if (unit.size() >= 3 && (unit.compare(unit.size() - 3, 3, "B/s") == 0 ||
                                    unit.compare(unit.size() - 3, 3, "Bps") == 0)) {
      unit.resize(unit.size() - 3);
    } else if (unit.size() >= 2 && unit.compare(unit.size() - 2, 2, "Bs") == 0) {
      unit.resize(unit.size() - 2);
    } else {
      return Status::InvalidParam;
    }
    const double base = bits ? 1000.0 : 1024.0;
    double mult = 1;
    const std::string prefix = to_lower(unit);
    if (prefix.empty()) {
      mult = 1;
    } else if (prefix == "k") {
      mult = base;
    } else if (prefix == "m") {
      mult = base * base;
    } else if (prefix == "g") {
      mult = base * base * base;
    } else if (prefix == "t") {
      mult = base * base * base * base;
    } else {
      return Status::InvalidParam;
    }
    *out = number * mult / (bits ? 8.0 : 1.0);
    return Status::Ok;
  };
  p.format = [](const double& v) {
    if (v >= 1024.0 * 1024 * 1024) return format_double(v / (1024.0 * 1024 * 1024)) + "GBs";
    if (v >= 1024.0 * 1024) return format_double(v / (1024.0 * 1024)) + "MBs";
    return format_double(v) + "Bs";
  };
  return p;
}

Parser<double> double_parser(double min, double max) {
  Parser<double> p;
  p.syntax = "a number in [" + format_double(min) + ", " + format_double(max) + "]";
  p.parse = [min, max](std::string_view text, double* out) {
    const std::string s(trim(text));
    if (s.empty()) return Status::InvalidParam;
    char* end = nullptr;
    const double v = std::strtod(s.c_str(), &end);
    if (end != s.c_str() + s.size() || !std::isfinite(v) || v < min || v > max) {
      return Status::InvalidParam;
    }
    *out = v;
    return Status::Ok;
  };
  p.format = [](const double& v) { return format_double(v); };
  return p;
}

Parser<AllowList> allow_list_parser() {
  Parser<AllowList> p;
  p.syntax = "a comma-separated list (\"a,b\"), \"^a,b\" for all but those, or \"all\"";
  p.parse = [](std::string_view text, AllowList* out) {
    std::string_view t = trim(text);
    AllowList list;
    if (to_lower(t) == "all") {
      *out = list;
      return Status::Ok;
    }
    list.negate = !t.empty() && t.front() == '^';
    if (list.negate) t.remove_prefix(1);
    list.items = split_list(t);
    for (const std::string& item : list.items) {
      if (item.empty() || item.find('^') != std::string::npos) return Status::InvalidParam;
    }
    if (list.items.empty()) return Status::InvalidParam;  // "" or "^" alone: say "all"
    *out = std::move(list);
    return Status::Ok;
  };
  p.format = [](const AllowList& v) {
    if (v.negate && v.items.empty()) return std::string("all");
    std::string s = v.negate ? "^" : "";
    for (size_t i = 0; i < v.items.size(); ++i) s += (i ? "," : "") + v.items[i];
    return s;
  };
  return p;
}

Parser<std::vector<std::string>> string_list_parser() {
  Parser<std::vector<std::string>> p;
  p.syntax = "a comma-separated list";
  p.parse = [](std::string_view text, std::vector<std::string>* out) {
    std::vector<std::string> items = split_list(text);
    for (const std::string& item : items) {
      if (item.empty()) return Status::InvalidParam;
    }
    *out = std::move(items);
    return Status::Ok;
  };
  p.format = [](const std::vector<std::string>& v) {
    std::string s;
    for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + v[i];
    return s;
  };
  return p;
}

}  // namespace mc::ucs::config
