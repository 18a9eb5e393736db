// SPDX-License-Identifier: Apache-2.0
// The packed worker address: versioned, self-describing and length-checked,
// one entry per usable iface of a worker.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "ucs/status/status.h"
#include "uct/api/types.h"
#include "ucs/sys/visibility.h"

namespace mc::ucp::wireup {

/// Version written by address_pack(); unpack refuses any other.
inline constexpr uint8_t kAddressVersion = 2;
/// Most iface entries one address may carry.
inline constexpr size_t kMaxAddressIfaces = 64;

/// What a peer needs to score a lane to one of our ifaces without opening it.
struct IfaceSummary {
  uint64_t cap = 0;      ///< uct::Cap bits
  double latency = 0;    ///< seconds (the constant term)
  double bandwidth = 0;  ///< bytes per second (dedicated + shared)
  double overhead = 0;   ///< seconds per operation
  int32_t priority = 0;
  uint32_t access_mem_types = 0;  ///< uct::MemTypeMask
  bool operator==(const IfaceSummary&) const = default;
};

/// One iface of a worker, as its peers see it.
struct AddressEntry {
  std::string component;  ///< "tcp"
  std::string md_name;    ///< the md that packs this worker's rkeys for the iface
  std::string tl_name;    ///< "tcp"
  std::string dev_name;   ///< "eth0"
  uct::DeviceType dev_type = uct::DeviceType::Net;
  std::vector<uint8_t> device_addr;
  std::vector<uint8_t> iface_addr;
  IfaceSummary summary;
  bool operator==(const AddressEntry&) const = default;
};

/// A worker's address: its identity and its ifaces.
struct WorkerAddress {
  uint64_t uuid = 0;     ///< random per worker
  /// Digest of the boot id and the network namespace (ucs::net_identity()):
  /// equal for two workers whose loopback addresses reach each other. 0:
  /// unknown.
  uint64_t net_identity = 0;
  std::string hostname;  ///< for messages only
  std::vector<AddressEntry> ifaces;
  bool operator==(const WorkerAddress&) const = default;
};

/// Packs `address`. Pure; thread-safe.
MC_INTERNAL std::vector<uint8_t> address_pack(const WorkerAddress& address);

/// Unpacks what address_pack() wrote. InvalidParam, with `*why` (when given)
/// naming the defect, for a bad magic, another version, any length that does
/// not fit, too many entries, unknown enum values, non-finite numbers or
/// trailing bytes. Logs nothing: the caller decides. Pure; thread-safe.
MC_INTERNAL ucs::Result<WorkerAddress> address_unpack(std::span<const uint8_t> packed,
                                          std::string* why = nullptr);

}  // namespace mc::ucp::wireup
