// SPDX-License-Identifier: Apache-2.0
// The process-wide table list, listings, and the unknown-variable check.
#include "ucs/config/registry.h"

#include <algorithm>
#include <set>

#include "ucs/log/log.h"

namespace mc::ucs {
// Defined in src/ucs/ucs_config.cc: registers the tables of the UCS concerns.
void register_ucs_config_tables(config::Registry& registry);
}  // namespace mc::ucs

namespace mc::ucs::config {

Registry& Registry::instance() {
  // Leaked on purpose: modules may use it from their own destructors at exit.
  static Registry* registry = [] {
    auto* r = new Registry();
    register_ucs_config_tables(*r);
    return r;
  }();
  return *registry;
}

void Registry::add_entry(const Table* table, Printer print, Reader read) {
  std::lock_guard guard(lock_);
  // A table compiled into several modules (the CUDA modules' "cuda
  // driver") is one table: the first registered of a name is kept.
  for (const Entry& e : entries_) {
    if (e.table == table || e.table->name() == table->name()) return;
  }
  entries_.push_back(Entry{table, std::move(print), std::move(read)});
}

std::vector<const Table*> Registry::tables() const {
  std::lock_guard guard(lock_);
  std::vector<const Table*> out;
  for (const Entry& e : entries_) out.push_back(e.table);
  return out;
}

void Registry::print(std::ostream& os, const Sources& sources, bool full) const {
  std::vector<Printer> printers;
  {
    std::lock_guard guard(lock_);
    for (const Entry& e : entries_) printers.push_back(e.print);
  }
  for (const Printer& p : printers) p(os, sources, full);
}

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t subst = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, subst});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::vector<UnknownVar> Registry::find_unknown(const Sources& sources) const {
  std::set<std::string> known;
  for (const Table* t : tables()) {
    for (const Field& f : t->fields()) known.insert(t->env_name(f));
  }
  std::vector<UnknownVar> unknown;
  for (const auto& [name, value] : sources.all()) {
    if (known.count(name)) continue;
    UnknownVar u{name, value.origin, {}};
    // Suggest a known name within a third of the length in edits.
    size_t best = name.size() / 3 + 1;
    for (const std::string& k : known) {
      const size_t d = edit_distance(name, k);
      if (d < best) {
        best = d;
        u.suggestion = k;
      }
    }
    unknown.push_back(std::move(u));
  }
  return unknown;
}

Status Registry::check(const std::string& full_name, const Sources& sources,
                       std::string* error) const {
  std::vector<Reader> readers;
  {
    std::lock_guard guard(lock_);
    for (const Entry& e : entries_) {
      for (const Field& f : e.table->fields()) {
        if (e.table->env_name(f) == full_name) {
          readers.push_back(e.read);
          break;
        }
      }
    }
  }
  if (readers.empty()) return Status::NoElem;
  for (const Reader& read : readers) {
    MC_RETURN_IF_ERROR(read(sources, error));
  }
  return Status::Ok;
}

void Registry::warn_unknown(const Sources& sources) const {
  for (const UnknownVar& u : find_unknown(sources)) {
    {
      std::lock_guard guard(lock_);
      if (std::find(warned_.begin(), warned_.end(), u.name) != warned_.end()) continue;
      warned_.push_back(u.name);
    }
    MC_LOG(warn) << "unknown configuration variable " << u.name << " (from " << u.origin << ")"
                 << (u.suggestion.empty() ? "" : ", did you mean " + u.suggestion + "?");
  }
}

}  // namespace mc::ucs::config
