// SPDX-License-Identifier: Apache-2.0
// The process-wide list of configuration tables: what mc_info prints, and what
// an MC_* variable is checked against.
#pragma once

#include <functional>
#include <mutex>
#include <ostream>
#include <string>
#include <vector>

#include "ucs/config/table.h"

namespace mc::ucs::config {

/// An MC_* setting that no registered table declares.
struct UnknownVar {
  std::string name;
  std::string origin;      ///< "environment" or "<file>:<line>"
  std::string suggestion;  ///< closest known name, or empty
};

/// Tables register here explicitly when their layer or module starts (never
/// from a static constructor). Thread-safe.
class Registry {
 public:
  /// The process-wide registry, holding the UCS tables from the start.
  static Registry& instance();

  /// Adds `table` (which must outlive the process's use of the registry)
  /// once; a second call with the same table, or with another table of the
  /// same name (one table compiled into several modules), is ignored.
  template <typename Obj>
  void add(const Table& table) {
    auto print = [&table](std::ostream& os, const Sources& sources, bool full) {
      Obj obj{};
      std::string error;
      Origins origins;
      if (is_error(table.read(&obj, sources, &error, &origins))) {
        os << "# " << table.name() << ": " << error << "\n";
        return;
      }
      table.print(os, &obj, full, &origins);
    };
    auto read = [&table](const Sources& sources, std::string* error) {
      Obj obj{};
      return table.read(&obj, sources, error);
    };
    add_entry(&table, std::move(print), std::move(read));
  }

  /// Every registered table, in registration order.
  std::vector<const Table*> tables() const;

  /// Prints every table's current values (mc_info -c; -f with docs).
  void print(std::ostream& os, const Sources& sources, bool full) const;

  /// MC_* names in `sources` that no table declares, with a suggestion.
  std::vector<UnknownVar> find_unknown(const Sources& sources) const;

  /// Logs each unknown variable of `sources` at warn level, once per process.
  void warn_unknown(const Sources& sources) const;

  /// Reads every table declaring `full_name` ("MC_TCP_SNDBUF") from
  /// `sources`, as the layer owning it would: Ok; InvalidParam with `*error`
  /// the read's sentence (variable, value, origin, what is accepted); NoElem
  /// when no registered table declares the name. Logs nothing.
  Status check(const std::string& full_name, const Sources& sources, std::string* error) const;

 private:
  using Printer = std::function<void(std::ostream&, const Sources&, bool)>;
  using Reader = std::function<Status(const Sources&, std::string*)>;
  struct Entry {
    const Table* table;
    Printer print;
    Reader read;  ///< the table into a scratch object of its type
  };
  void add_entry(const Table* table, Printer print, Reader read);

  mutable std::mutex lock_;  // guards entries_ and warned_
  std::vector<Entry> entries_;
  mutable std::vector<std::string> warned_;
};

/// Edit distance, for "did you mean" suggestions.
size_t edit_distance(std::string_view a, std::string_view b);

}  // namespace mc::ucs::config
