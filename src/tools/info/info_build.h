// SPDX-License-Identifier: Apache-2.0
// mc_info -b: the build configuration (what configure found, from config.h).
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "ucs/config/registry.h"
#include "ucs/config/sources.h"

namespace mc::info {

/// Writes the version, build kind, compiler, module ABI and every optional
/// dependency configure looked for with whether it was found; as one JSON
/// object with `json`.
void print_build(bool json, std::ostream& os);

/// A module this build does not have because configure left it out.
struct LeftOutModule {
  std::string kind;    ///< "uct", "metadata"
  std::string name;    ///< "nvmeof"
  std::string reason;  ///< configure's: "liburing not found (...)"
};

/// What configure left out (config.h's MC_CONFIGURE_LEFT_OUT), in its order.
std::vector<LeftOutModule> configure_left_out();

/// mc_info -m --json: the module search path and every module found (kind,
/// name, path, load state, ABI, build tag, version, the reason of a
/// failure), the modules configure left out with its reason, and the reason
/// of each loaded component that found no device.
void print_modules_json(std::ostream& os);

/// mc_info -d --json: modules that did not load, then every component with
/// its memory domains (attributes, memory types) and their transports
/// (iface attributes: performance model, caps, limits, address lengths).
void print_devices_json(std::ostream& os);

/// mc_info -c / -f --json: the files read, every registered table's knobs
/// with the text in force, its origin and the default (-f: syntax and doc
/// too), and the unknown MC_* variables with a suggestion.
void print_config_json(const ucs::config::Registry& registry, const ucs::config::Sources& sources,
                       bool full, std::ostream& os);

}  // namespace mc::info
