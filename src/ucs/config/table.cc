// SPDX-License-Identifier: Apache-2.0
// Reading and printing configuration tables.
#include "ucs/config/table.h"

#include "ucs/log/log.h"

namespace mc::ucs::config {

Table::Table(std::string name, std::string prefix, std::vector<Field> fields)
    : name_(std::move(name)), prefix_(std::move(prefix)), fields_(std::move(fields)) {}

std::string Table::env_name(const Field& f) const { return "MC_" + prefix_ + f.name; }

Status Table::read(void* obj, const Sources& sources, std::string* error,
                   Origins* origins) const {
  for (const Field& f : fields_) {
    const std::string var = env_name(f);
    const std::optional<SourceValue> given = sources.lookup(var);
    const std::string& text = given ? given->value : f.default_value;
    if (is_error(f.set(obj, text))) {
      if (error) {
        *error = given ? "invalid value '" + text + "' for " + var + " (from " + given->origin +
                             "): expected " + f.syntax
                       : "invalid default '" + text + "' for " + var + ": expected " + f.syntax;
      }
      return Status::InvalidParam;
    }
    if (origins) (*origins)[f.name] = given ? given->origin : "default";
  }
  return Status::Ok;
}

void Table::print(std::ostream& os, const void* obj, bool full, const Origins* origins) const {
  os << "#\n# " << name_ << "\n#\n";
  for (const Field& f : fields_) {
    if (full) {
      os << "\n# " << f.doc << "\n";
      os << "# syntax:  " << f.syntax << "\n";
      os << "# default: " << (f.default_value.empty() ? "(empty)" : f.default_value);
      if (origins) {
        if (auto it = origins->find(f.name); it != origins->end() && it->second != "default") {
          os << "  (set in " << it->second << ")";
        }
      }
      os << "\n";
    }
    os << env_name(f) << "=" << f.get(obj) << "\n";
  }
  os << "\n";
}

namespace {
// Markdown table cells cannot hold a bare '|'.
std::string md_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '|') out += '\\';
    out += c;
  }
  return out;
}
}  // namespace

void Table::print_markdown(std::ostream& os, const std::string& note) const {
  os << "\n**" << name_ << "**\n\n";
  if (!note.empty()) os << note << "\n\n";
  os << "| Variable | Default | Meaning |\n|---|---|---|\n";
  for (const Field& f : fields_) {
    os << "| `" << env_name(f) << "` | " << (f.default_value.empty() ? "" : "`" + md_escape(f.default_value) + "`")
       << " | " << md_escape(f.doc) << " Accepts " << md_escape(f.syntax) << ". |\n";
  }
}

void log_read_error(const std::string& error) { MC_LOG(error) << error; }

}  // namespace mc::ucs::config
