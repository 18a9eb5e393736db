// SPDX-License-Identifier: Apache-2.0
// Rkey: a peer's packed remote key unpacked for the lanes of one endpoint.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "ucs/sys/visibility.h"
#include "uct/api/md.h"

namespace mc::ucp {

/// Made by Endpoint::rkey_unpack(); valid for that endpoint only, and must
/// not outlive it. Thread safety: immutable.
class MC_API Rkey {
 public:
  ~Rkey();
  Rkey(const Rkey&) = delete;
  Rkey& operator=(const Rkey&) = delete;

  /// Start and length of the remote registration.
  uint64_t address() const { return address_; }
  uint64_t length() const { return length_; }
  /// Whether [addr, addr + len) lies inside the remote registration.
  bool contains(uint64_t addr, size_t len) const {
    return addr >= address_ && len <= length_ && addr - address_ <= length_ - len;
  }
  /// The memory type of the remote registration (GPU memory: a put or get
  /// that no lane's key reaches is staged by the peer, "remote staging").
  uct::MemType mem_type() const { return mem_type_; }
  /// Whether some lane of the endpoint has a key for the registration.
  bool any_lane() const {
    for (const auto& k : lanes_) {
      if (k) return true;
    }
    return false;
  }
  /// The UCT rkey for lane `lane` of the endpoint; null when the peer's key
  /// has no entry for that lane's memory domain.
  const uct::Rkey* for_lane(size_t lane) const {
    return lane < lanes_.size() ? lanes_[lane].get() : nullptr;
  }

 private:
  friend class EndpointImpl;
  Rkey() = default;

  uint64_t address_ = 0;
  uint64_t length_ = 0;
  uct::MemType mem_type_ = uct::MemType::Host;
  std::vector<std::unique_ptr<uct::Rkey>> lanes_;
};

}  // namespace mc::ucp
