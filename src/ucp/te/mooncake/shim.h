// SPDX-License-Identifier: Apache-2.0
// What the C API (transfer_engine_c.cc) and the C++ API (transfer_engine.cc)
// of libtransfer_engine share: Mooncake's meaning of a task's status, and the
// diagnostics both offer (discoverTopology, showLinks).
#pragma once

#include <string>

#include "mc/transfer_engine.h"

namespace mc::mooncake_api {

/// Mooncake's TransferStatusEnum value of an mc task: a remote range outside
/// the buffers the segment's owner registered (mc: INVALID, error Rejected)
/// is FAILED, as a remote failure is in Mooncake; the rest as they are.
int task_status(const mc::TransferStatus& status);

/// Reads the machine's topology now (ucs/topo) and logs what it found: 0, or
/// the discovery's negative status (logged).
int discover_topology();

/// The engine's local devices with their load and its NIC priority matrix:
/// text, or a JSON object {"devices": [...], "priority_matrix": {...}}.
std::string show_links(const mc::TransferEngine& engine, bool json);

/// Logs that mc installs no signal handler (enableGracefulShutdown).
void note_no_graceful_shutdown();

}  // namespace mc::mooncake_api
