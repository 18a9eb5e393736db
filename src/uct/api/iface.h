// SPDX-License-Identifier: Apache-2.0
// Iface: a transport opened on one device. Reports its attributes, makes
// endpoints, dispatches active messages, and is driven by progress().
#pragma once

#include <array>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "uct/api/md.h"
#include "uct/api/types.h"

namespace mc::uct {

class Endpoint;

/// Thread safety: one thread drives an iface and its endpoints (progress,
/// operations, ep_create); the transport's own threads never call user code
/// except where IfaceAttr::cap has kCapAmThreadSafe.
class Iface {
 public:
  explicit Iface(MemoryDomain* md) : md_(md) {}
  virtual ~Iface() = default;
  Iface(const Iface&) = delete;
  Iface& operator=(const Iface&) = delete;

  MemoryDomain& md() const { return *md_; }

  virtual IfaceAttr query() const = 0;

  /// Moves work forward: completions, received active messages, pending
  /// requests. Returns how many events it handled.
  virtual unsigned progress() = 0;

  /// Sets the handler of active messages with `id` (< kAmIdMax); an empty
  /// handler removes it. Messages for an id without a handler are dropped
  /// with a warning.
  Status set_am_handler(uint8_t id, AmHandler handler);

  /// The address that identifies the device (e.g. an IP address), and the
  /// one that identifies this iface on it (e.g. a port).
  virtual std::vector<uint8_t> device_address() const = 0;
  virtual std::vector<uint8_t> iface_address() const = 0;

  /// Whether this iface can reach a peer iface; when not, `reason` says why
  /// ("different host", "address family mismatch", ...). Malformed addresses
  /// are unreachable, with the reason.
  virtual bool is_reachable(std::span<const uint8_t> device_addr,
                            std::span<const uint8_t> iface_addr, std::string* reason) const = 0;

  /// Creates an endpoint to a peer iface (kCapConnectToIface). The connection
  /// may complete in the background; operations queue or return NoResource
  /// until it does. Unreachable / InvalidParam for bad addresses.
  virtual Result<std::unique_ptr<Endpoint>> ep_create(std::span<const uint8_t> device_addr,
                                                      std::span<const uint8_t> iface_addr) = 0;

  /// Completes when every operation posted on any endpoint of this iface is
  /// complete. Ok: nothing outstanding; InProgress: `comp` will be called.
  virtual Status flush(Completion* comp) = 0;

  /// A file descriptor that becomes readable when progress() has work
  /// (kCapEventFd); Unsupported otherwise.
  virtual Result<int> event_fd();

  /// Arms the event fd. Busy when there is already work: call progress().
  virtual Status arm();

 protected:
  /// Runs the handler of `id`; for transports' progress().
  Status invoke_am(uint8_t id, const void* data, size_t length, unsigned flags);

 private:
  MemoryDomain* md_;
  std::array<AmHandler, kAmIdMax> am_handlers_;
};

}  // namespace mc::uct
