// SPDX-License-Identifier: Apache-2.0
// The software verbs provider: the VerbsOps table implemented in user space
// over the shared-memory fabric, for tests on machines without an RDMA NIC.
// RDMA WRITE/READ run directly on the peer's registered memory (memcpy in
// one process, process_vm_readv/writev across processes) after the rkey,
// access and bounds checks a NIC makes; SEND lands in the peer QP's ring and
// is matched to a posted receive when the peer polls its CQ. Failures give
// the completion codes a NIC gives, and the QP state machine is enforced.
#pragma once

#include <string>

#include "uct/ib/base/ib_verbs.h"

namespace mc::uct::ib::soft {

/// The soft table on fabric `fabric` with `devices` devices named
/// mcsoft0.. (one port each, RoCE v2, 100 Gb/s). The first call fixes the
/// fabric and device count for the process; a later call with other values
/// is InvalidParam.
ucs::Result<const VerbsOps*> verbs_ops_soft(const std::string& fabric, unsigned devices,
                                            std::string* why);

}  // namespace mc::uct::ib::soft
