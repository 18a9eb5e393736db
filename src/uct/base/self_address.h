// SPDX-License-Identifier: Apache-2.0
// The addresses of an iface that connects only to itself, inside this
// process (self, cuda_copy, nvmeof): the device address is the host's boot id
// hash, the iface address an id unique on the host.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "ucs/status/status.h"

namespace mc::uct {

class SelfAddress {
 public:
  /// `tl` names the transport in messages; `why` says why it connects only
  /// to itself ("it copies inside this process").
  SelfAddress(std::string tl, std::string why);

  std::vector<uint8_t> device_address() const;  ///< u64 boot id hash
  std::vector<uint8_t> iface_address() const;   ///< u64 iface id

  /// True when the pair names this iface; else false with `*reason`
  /// (optional): a malformed address, another host, or another iface.
  bool is_reachable(std::span<const uint8_t> device_addr, std::span<const uint8_t> iface_addr,
                    std::string* reason) const;

  /// Ok when the pair names this iface; else Unreachable, logged with the
  /// reason (ep_create).
  ucs::Status check_connect(std::span<const uint8_t> device_addr,
                            std::span<const uint8_t> iface_addr) const;

  static constexpr size_t kAddrLen = 8;  ///< of either address

 private:
  std::string tl_;
  std::string why_;
  uint64_t id_;  ///< (pid << 32) | a counter of this process
};

}  // namespace mc::uct
