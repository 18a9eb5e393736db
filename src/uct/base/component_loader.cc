// SPDX-License-Identifier: Apache-2.0
// UCT component discovery through the UCS module loader.
#include "uct/base/component_loader.h"

#include <mutex>

namespace mc::uct {

std::vector<Component*> load_components(std::vector<ucs::ModuleInfo>* modules) {
  std::vector<ucs::ModuleInfo> infos = ucs::ModuleLoader::instance().load("uct", kApiVersion);
  std::vector<Component*> components;
  for (const ucs::ModuleInfo& m : infos) {
    if (m.state == ucs::ModuleState::Loaded) components.push_back(static_cast<Component*>(m.object));
  }
  static std::once_flag registered;
  std::call_once(registered, [&components] {
    for (Component* c : components) c->register_config(ucs::config::Registry::instance());
  });
  if (modules) *modules = std::move(infos);
  return components;
}

Component* find_component(const std::string& name) {
  for (Component* c : load_components()) {
    if (c->name() == name) return c;
  }
  return nullptr;
}

}  // namespace mc::uct
