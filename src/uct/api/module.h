// SPDX-License-Identifier: Apache-2.0
// How a transport module exports its component: one macro, one C symbol.
#pragma once

#include <cstdio>
#include <exception>

#include "ucs/module/module_abi.h"
#include "uct/api/component.h"

namespace mc::uct::detail {

/// Makes a component, turning any exception into an error string: nothing
/// may cross the module boundary as an exception.
template <typename ComponentT>
int create_component(void** object, char* err, size_t err_len) {
  try {
    *object = static_cast<Component*>(new ComponentT());
    return 0;
  } catch (const std::exception& e) {
    std::snprintf(err, err_len, "component constructor threw: %s", e.what());
  } catch (...) {
    std::snprintf(err, err_len, "component constructor threw an unknown exception");
  }
  *object = nullptr;
  return -1;
}

inline void destroy_component(void* object) { delete static_cast<Component*>(object); }

}  // namespace mc::uct::detail

/// Defines the entry symbol of a UCT module whose component class is
/// `ComponentT` (default-constructible). The module file must be named
/// libmc_uct_<name>.so: MC_UCT_MODULE_DEFINE("tcp", "1.0", TcpComponent)
#define MC_UCT_MODULE_DEFINE(name_, version_, ComponentT)                             \
  MC_MODULE_DEFINE("uct", name_, version_, ::mc::uct::kApiVersion,                    \
                   ::mc::uct::detail::create_component<ComponentT>,                  \
                   ::mc::uct::detail::destroy_component)
