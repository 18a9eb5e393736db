// SPDX-License-Identifier: Apache-2.0
// The test registry.
#include "tools/perf/perf_registry.h"

#include <algorithm>

namespace mc::perf {

const char* api_name(Api api) {
  switch (api) {
    case Api::Uct: return "transport layer (UCT)";
    case Api::Ucp: return "protocol layer (UCP)";
    case Api::TransferEngine: return "transfer engine";
  }
  return "?";
}

void Registry::add(TestInfo info, RunFn run) {
  auto it = std::find_if(entries_.begin(), entries_.end(),
                         [&](const Entry& e) { return e.info.name == info.name; });
  if (it != entries_.end()) {
    *it = Entry{std::move(info), std::move(run)};
  } else {
    entries_.push_back(Entry{std::move(info), std::move(run)});
  }
}

void Registry::add_alias(std::string alias, std::string name) {
  aliases_.emplace_back(std::move(alias), std::move(name));
}

const Registry::Entry* Registry::find(std::string_view name) const {
  for (const auto& [alias, target] : aliases_) {
    if (alias == name) {
      name = target;
      break;
    }
  }
  for (const Entry& e : entries_) {
    if (e.info.name == name) return &e;
  }
  return nullptr;
}

std::vector<std::string> Registry::aliases_of(std::string_view name) const {
  std::vector<std::string> out;
  for (const auto& [alias, target] : aliases_) {
    if (target == name) out.push_back(alias);
  }
  return out;
}

}  // namespace mc::perf
