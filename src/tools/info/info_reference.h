// SPDX-License-Identifier: Apache-2.0
// mc_info -M: the configuration reference, the same for every build.
#pragma once

#include <ostream>

namespace mc::info {

/// Prints every knob of every layer and module as Markdown, whether this
/// build has the module or not (a module's section says when it is built);
/// loads no module.
void print_config_reference(std::ostream& os);

}  // namespace mc::info
