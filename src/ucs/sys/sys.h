// SPDX-License-Identifier: Apache-2.0
// Host facts: identity for same-host reachability, page sizes, CPUs, ports.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "ucs/status/status.h"

namespace mc::ucs {

/// What makes two processes "on the same host" for shared memory and
/// loopback: the same boot and the same namespaces.
struct HostIdentity {
  std::string hostname;
  std::string boot_id;  ///< /proc/sys/kernel/random/boot_id, without dashes
  uint64_t net_ns = 0;  ///< inode of /proc/self/ns/net
  uint64_t ipc_ns = 0;  ///< inode of /proc/self/ns/ipc (System V and POSIX shm)
  uint64_t mnt_ns = 0;  ///< inode of /proc/self/ns/mnt (/dev/shm visibility)

  /// Same boot and same IPC and mount namespaces: shared memory works.
  bool shares_memory_with(const HostIdentity& other) const;
  /// Same boot and same network namespace: loopback addresses reach.
  bool shares_network_with(const HostIdentity& other) const;
};

/// This process's identity, read once and cached.
const HostIdentity& host_identity();

/// A 64-bit digest of the boot id, for compact packed addresses.
uint64_t boot_id_hash();

/// A 64-bit digest of the boot id and the network namespace: two processes
/// with equal values reach each other's loopback addresses (never 0).
uint64_t net_identity();

/// The system page size in bytes.
size_t page_size();

/// The default huge page size in bytes, or 0 when huge pages are unavailable.
size_t huge_page_size();

/// Online CPUs.
unsigned cpu_count();

/// A TCP port on 127.0.0.1 free at the time of the call (tests and tools).
/// Taken at random below the kernel's ephemeral range
/// (net.ipv4.ip_local_port_range) and above 20000 where there is room, so
/// that an outgoing connection made meanwhile cannot take it before its
/// user binds it; else one the kernel picks.
Result<uint16_t> find_free_tcp_port();

/// strerror(err) as a std::string, thread-safe.
std::string errno_string(int err);

/// Whether an accept() that failed with `err` may be retried at once: the
/// connection went away, or accept reported its pending network error (not
/// so for EMFILE, ENFILE, ENOBUFS, ENOMEM: those want a pause).
bool accept_retry_now(int err);

/// Names the calling thread for top -H, ps -L and gdb (mc_*: the kernel
/// keeps 15 characters; a longer name is cut there).
void set_thread_name(const char* name);

/// Monotonic time in nanoseconds.
uint64_t monotonic_ns();
/// Monotonic time in nanoseconds at the resolution of the kernel's tick
/// (CLOCK_MONOTONIC_COARSE: 1-4 ms), for intervals of tens of ms and more
/// checked on a hot path: several times cheaper than monotonic_ns().
uint64_t coarse_monotonic_ns();

}  // namespace mc::ucs
