// SPDX-License-Identifier: Apache-2.0
// SelfAddress.
#include "uct/base/self_address.h"

#include <unistd.h>

#include <atomic>
#include <utility>

#include "ucs/datastruct/wire.h"
#include "ucs/log/log.h"
#include "ucs/sys/sys.h"

namespace mc::uct {

namespace {

// Unique in the process; with the pid and boot id, unique on the host.
uint64_t next_iface_id() {
  static std::atomic<uint32_t> counter{0};
  return (static_cast<uint64_t>(getpid()) << 32) | ++counter;
}

}  // namespace

SelfAddress::SelfAddress(std::string tl, std::string why)
    : tl_(std::move(tl)), why_(std::move(why)), id_(next_iface_id()) {}

std::vector<uint8_t> SelfAddress::device_address() const {
  std::vector<uint8_t> out;
  ucs::WireWriter(&out).u64(ucs::boot_id_hash());
  return out;
}

std::vector<uint8_t> SelfAddress::iface_address() const {
  std::vector<uint8_t> out;
  ucs::WireWriter(&out).u64(id_);
  return out;
}

bool SelfAddress::is_reachable(std::span<const uint8_t> device_addr,
                               std::span<const uint8_t> iface_addr, std::string* reason) const {
  ucs::WireReader dev(device_addr), iface(iface_addr);
  const uint64_t boot = dev.u64();
  const uint64_t id = iface.u64();
  std::string why;
  if (!dev.at_end() || !iface.at_end()) {
    why = "malformed " + tl_ + " address";
  } else if (boot != ucs::boot_id_hash()) {
    why = tl_ + " reaches only this host: " + why_;
  } else if (id != id_) {
    why = tl_ + " connects only to its own iface: " + why_;
  } else {
    return true;
  }
  if (reason) *reason = std::move(why);
  return false;
}

ucs::Status SelfAddress::check_connect(std::span<const uint8_t> device_addr,
                                       std::span<const uint8_t> iface_addr) const {
  std::string reason;
  if (is_reachable(device_addr, iface_addr, &reason)) return ucs::Status::Ok;
  MC_LOG(error) << tl_ << ": cannot connect: " << reason;
  return ucs::Status::Unreachable;
}

}  // namespace mc::uct
