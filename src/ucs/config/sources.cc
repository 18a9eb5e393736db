// SPDX-License-Identifier: Apache-2.0
// Reads MC_* settings from the environment and from config files.
#include "ucs/config/sources.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "ucs/config/parser.h"

extern char** environ;

namespace mc::ucs::config {

namespace {

constexpr std::string_view kPrefix = "MC_";

bool read_file(const std::string& path, std::string* text, int* err) {
  std::ifstream in(path);
  if (!in) {
    *err = errno;
    return false;
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  *text = ss.str();
  return true;
}

void set_error(std::string* error, std::string text) {
  if (error) *error = std::move(text);
}

}  // namespace

// File format, one setting a line:
//   # comment
//   MC_TCP_SNDBUF = 4m          (the MC_ prefix may be left out)
//   MC_TLS = "tcp,sm"           (double quotes are stripped)
Status Sources::parse_file(const std::string& name, const std::string& text, std::string* error) {
  std::istringstream in(text);
  std::string line;
  int lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    std::string_view l = trim(line);
    if (l.empty() || l.front() == '#') continue;
    const size_t eq = l.find('=');
    const std::string where = name + ":" + std::to_string(lineno);
    if (eq == std::string_view::npos) {
      set_error(error, "config file " + where + ": expected 'MC_NAME = value', got '" +
                           std::string(l) + "'");
      return Status::InvalidParam;
    }
    std::string key(trim(l.substr(0, eq)));
    std::string_view value = trim(l.substr(eq + 1));
    if (value.size() >= 2 && value.front() == '"' && value.back() == '"') {
      value = value.substr(1, value.size() - 2);
    }
    bool key_ok = !key.empty();
    for (char c : key) {
      key_ok = key_ok && (std::isupper(static_cast<unsigned char>(c)) ||
                          std::isdigit(static_cast<unsigned char>(c)) || c == '_');
    }
    if (!key_ok) {
      set_error(error, "config file " + where + ": '" + key +
                           "' is not a variable name (upper case, digits and '_')");
      return Status::InvalidParam;
    }
    if (key.rfind(kPrefix, 0) != 0) key = std::string(kPrefix) + key;
    file_values_[key] = SourceValue{std::string(value), where};
  }
  files_.push_back(name);
  return Status::Ok;
}

Result<Sources> Sources::from(const std::map<std::string, std::string>& env,
                              const std::vector<std::pair<std::string, std::string>>& files,
                              std::string* error) {
  Sources s;
  for (const auto& [k, v] : env) {
    if (k.rfind(kPrefix, 0) == 0) s.env_[k] = SourceValue{v, "environment"};
  }
  for (const auto& [name, text] : files) {
    MC_RETURN_IF_ERROR(s.parse_file(name, text, error));
  }
  return s;
}

void Sources::set(const std::string& full_name, const std::string& value,
                  const std::string& origin) {
  if (full_name.rfind(kPrefix, 0) == 0) env_[full_name] = SourceValue{value, origin};
}

Result<Sources> Sources::from_process(std::string* error) {
  std::map<std::string, std::string> env;
  for (char** e = environ; e && *e; ++e) {
    const char* eq = std::strchr(*e, '=');
    if (eq && std::strncmp(*e, kPrefix.data(), kPrefix.size()) == 0) {
      env.emplace(std::string(*e, static_cast<size_t>(eq - *e)), std::string(eq + 1));
    }
  }

  std::vector<std::pair<std::string, std::string>> files;
  std::vector<std::pair<std::string, bool>> candidates = {
      {std::string(MC_SYSCONFDIR) + "/mc.conf", false}};
  if (const char* home = std::getenv("HOME"); home && *home) {
    candidates.emplace_back(std::string(home) + "/.mc.conf", false);
  }
  if (auto it = env.find("MC_CONFIG_FILE"); it != env.end() && !it->second.empty()) {
    candidates.emplace_back(it->second, true);
  }
  for (const auto& [path, required] : candidates) {
    std::string text;
    int err = 0;
    if (read_file(path, &text, &err)) {
      files.emplace_back(path, std::move(text));
    } else if (required) {
      set_error(error, "MC_CONFIG_FILE='" + path + "' cannot be read: " + std::strerror(err));
      return Status::IoError;
    }
  }
  return from(env, files, error);
}

std::optional<SourceValue> Sources::lookup(const std::string& full_name) const {
  if (auto it = env_.find(full_name); it != env_.end()) return it->second;
  if (auto it = file_values_.find(full_name); it != file_values_.end()) return it->second;
  return std::nullopt;
}

std::map<std::string, SourceValue> Sources::all() const {
  std::map<std::string, SourceValue> merged = file_values_;
  for (const auto& [k, v] : env_) merged[k] = v;
  return merged;
}

}  // namespace mc::ucs::config
