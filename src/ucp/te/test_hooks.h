// SPDX-License-Identifier: Apache-2.0
// TEST ONLY, not part of the Transfer Engine's API (not installed): hooks
// with which mc_gtest runs an engine over test doubles.
#pragma once

#include <vector>

#include "ucs/sys/visibility.h"
#include "uct/api/component.h"

namespace mc::te {

/// TEST ONLY. UCT components linked into the caller (a test double such as
/// mc_gtest's fake GPU) that each TransferEngine initialised from now on in
/// this process gives its UCP context (ucp::ContextParams::components), to
/// be filtered by MC_TLS like the modules' components. Empty (the default):
/// none. Each must outlive those engines. Not thread-safe: set it while no
/// engine is being initialised.
MC_INTERNAL void set_test_components(std::vector<uct::Component*> components);

}  // namespace mc::te
