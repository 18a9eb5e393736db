// SPDX-License-Identifier: Apache-2.0
// The UCT conformance checks of mc_uct_check, ported from the gtest suite
// (test/gtest/uct/test_uct_conformance.cc): same operations, same sizes,
// data checked end to end.
#pragma once

#include "tools/uct_check/check_harness.h"

namespace mc::uct::check {

/// Sender and target in this process (self: one entity is both).
void run_one_process(const Resource& r, Table& table);

/// The target in a forked child: put, get and an active message across
/// processes. Forks: call before anything starts threads.
void run_two_process(const Resource& r, Table& table);

}  // namespace mc::uct::check
