// SPDX-License-Identifier: Apache-2.0
// Cross-memory attach: process_vm_readv / process_vm_writev straight between
// the memories of two processes, with the kernel's ptrace permission check.
#pragma once

#include <sys/types.h>
#include <sys/uio.h>

#include <cstdint>
#include <string>

#include "ucs/status/status.h"

namespace mc::uct::sm {

/// Copies between the local `iov` and [remote_addr, remote_addr + total) of
/// process `pid` (`write`: to the remote; else from it); `total` is the sum
/// of the iov lengths, at most 1024 entries. Ok; Unsupported when the
/// kernel refuses (EPERM, or no CMA at all): the caller falls back to the
/// ring, and the first refusal in the process is logged as an error naming
/// /proc/sys/kernel/yama/ptrace_scope and its value; ConnectionReset when
/// the process is gone; IoError (logged) for anything else, e.g. an
/// unmapped remote address.
ucs::Status cma_copy(pid_t pid, bool write, const iovec* iov, size_t count, uint64_t remote_addr,
                     size_t total);

/// The value of /proc/sys/kernel/yama/ptrace_scope, or a note saying why
/// there is none.
std::string ptrace_scope();

}  // namespace mc::uct::sm
