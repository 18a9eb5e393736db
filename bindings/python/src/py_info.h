// SPDX-License-Identifier: Apache-2.0
// mc.info() and mc.config's native half: mc_info's own JSON generators
// (src/tools/info) and the configuration registry's checks.
#pragma once

#include <pybind11/pybind11.h>

#include <string>

namespace mc::py {

/// Checks `value` for the MC_* knob `name` as the layer that reads it would,
/// over the process's environment and files. Raises NoElemError for a name
/// no table declares (with mc's "did you mean"), InvalidParamError with the
/// table's sentence for a bad value.
void check_knob(const std::string& name, const std::string& value);

/// How many engines of this process are open.
int live_engines();

void bind_info(pybind11::module_& m);

}  // namespace mc::py
