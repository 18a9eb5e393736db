// SPDX-License-Identifier: Apache-2.0
// Loads the UCT transport modules and hands out their components.
#pragma once

#include <vector>

#include "ucs/module/module_loader.h"
#include "uct/api/component.h"

namespace mc::uct {

/// Every component of the loaded "uct" modules (libmc_uct_<name>.so), loaded
/// once per process; modules built for another UCT API version are refused.
/// Each component's configuration tables are registered on first load.
/// `modules`, when given, receives the outcome of every uct module.
std::vector<Component*> load_components(std::vector<ucs::ModuleInfo>* modules = nullptr);

/// The component called `name`, or null.
Component* find_component(const std::string& name);

}  // namespace mc::uct
