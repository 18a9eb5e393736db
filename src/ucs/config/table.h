// SPDX-License-Identifier: Apache-2.0
// Declarative configuration tables: each knob has a name, a default, a doc
// line and a parser, bound to a member of a plain config struct.
#pragma once

#include <functional>
#include <map>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "ucs/config/parser.h"
#include "ucs/config/sources.h"
#include "ucs/status/status.h"

namespace mc::ucs::config {

/// One knob. `set` parses text into the bound member of an object; `get`
/// formats that member back.
struct Field {
  std::string name;           ///< without prefix, e.g. "LOG_LEVEL"
  std::string default_value;  ///< text, parsed like any other value
  std::string doc;            ///< one or two sentences
  std::string syntax;         ///< what the parser accepts
  std::function<Status(void* obj, std::string_view text)> set;
  std::function<std::string(const void* obj)> get;
};

/// Binds `member` of `Obj` to a knob parsed by `parser`.
template <typename Obj, typename T>
Field field(std::string name, std::string default_value, std::string doc, T Obj::*member,
            Parser<T> parser) {
  Field f;
  f.name = std::move(name);
  f.default_value = std::move(default_value);
  f.doc = std::move(doc);
  f.syntax = parser.syntax;
  f.set = [member, parse = parser.parse](void* obj, std::string_view text) {
    return parse(text, &(static_cast<Obj*>(obj)->*member));
  };
  f.get = [member, format = parser.format](const void* obj) {
    return format(static_cast<const Obj*>(obj)->*member);
  };
  return f;
}

/// Where each value of a read came from: "default", "environment", or
/// "<file>:<line>", keyed by field name.
using Origins = std::map<std::string, std::string>;

/// A named group of knobs sharing an environment prefix (MC_ + prefix).
class Table {
 public:
  /// `name` is for listings ("tcp transport"); `prefix` is the sub-prefix
  /// after MC_ ("TCP_", or "" for global knobs).
  Table(std::string name, std::string prefix, std::vector<Field> fields);

  const std::string& name() const { return name_; }
  const std::string& prefix() const { return prefix_; }
  const std::vector<Field>& fields() const { return fields_; }

  /// "MC_" + prefix + field name.
  std::string env_name(const Field& f) const;

  /// Fills `obj` from defaults < config files < environment. On a bad value
  /// returns InvalidParam and sets `*error` to a sentence naming the
  /// variable, the value, where it came from and what is accepted.
  Status read(void* obj, const Sources& sources, std::string* error,
              Origins* origins = nullptr) const;

  /// Writes "MC_X=value" lines; with `full`, each preceded by its doc,
  /// syntax, default and origin as '#' comments (mc_info -c / -f).
  void print(std::ostream& os, const void* obj, bool full, const Origins* origins = nullptr) const;

  /// The table's section of the Markdown reference (docs/configuration.md): its
  /// name as a heading, `note` (when not empty) as a paragraph under it, and
  /// a row per knob.
  void print_markdown(std::ostream& os, const std::string& note = "") const;

 private:
  std::string name_;
  std::string prefix_;
  std::vector<Field> fields_;
};

/// Reads a table into a value-initialised `Obj`, logging the error (the first
/// function that detects an error logs it). `error` is optional.
template <typename Obj>
Result<Obj> read_table(const Table& table, const Sources& sources,
                       std::string* error = nullptr, Origins* origins = nullptr);

/// Same, from the process environment and config files.
template <typename Obj>
Result<Obj> read_table(const Table& table, std::string* error = nullptr) {
  Result<Sources> sources = Sources::from_process();
  if (!sources.ok()) return sources.status();
  return read_table<Obj>(table, *sources, error);
}

/// Logs `error` at error level; a helper so the template stays small.
void log_read_error(const std::string& error);

template <typename Obj>
Result<Obj> read_table(const Table& table, const Sources& sources, std::string* error,
                       Origins* origins) {
  Obj obj{};
  std::string why;
  const Status status = table.read(&obj, sources, &why, origins);
  if (is_error(status)) {
    log_read_error(why);
    if (error) *error = why;
    return status;
  }
  return obj;
}

}  // namespace mc::ucs::config
