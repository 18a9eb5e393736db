// SPDX-License-Identifier: Apache-2.0
// Where configuration values come from: config files, then the environment.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ucs/status/status.h"

namespace mc::ucs::config {

/// A value and where it was set ("environment" or "<file>:<line>").
struct SourceValue {
  std::string value;
  std::string origin;
};

/// A snapshot of every MC_* setting from config files and the environment.
/// Files are read in order ($sysconfdir/mc.conf, ~/.mc.conf, MC_CONFIG_FILE),
/// a later file overriding an earlier one; the environment overrides all.
class Sources {
 public:
  Sources() = default;

  /// Snapshot of this process: its environment and the config files.
  /// Returns InvalidParam when a config file has a malformed line, or IoError
  /// when MC_CONFIG_FILE names a file that cannot be read.
  static Result<Sources> from_process(std::string* error = nullptr);

  /// For tests and tools: explicit environment (full names, e.g.
  /// "MC_LOG_LEVEL") and file texts (name, contents), files in order.
  static Result<Sources> from(const std::map<std::string, std::string>& env,
                              const std::vector<std::pair<std::string, std::string>>& files,
                              std::string* error = nullptr);

  /// Sets a full name ("MC_TLS") over the environment and the files, with
  /// `origin` as where it came from; a name not starting with MC_ is ignored.
  void set(const std::string& full_name, const std::string& value, const std::string& origin);

  /// The value of a full name ("MC_TCP_SNDBUF"), environment first.
  std::optional<SourceValue> lookup(const std::string& full_name) const;

  /// Every MC_* name set by the environment or a file, with its origin.
  std::map<std::string, SourceValue> all() const;

  /// The config files that were read, in order.
  const std::vector<std::string>& files() const { return files_; }

 private:
  Status parse_file(const std::string& name, const std::string& text, std::string* error);

  std::map<std::string, SourceValue> env_;
  std::map<std::string, SourceValue> file_values_;
  std::vector<std::string> files_;
};

}  // namespace mc::ucs::config
