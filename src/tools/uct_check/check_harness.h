// SPDX-License-Identifier: Apache-2.0
// mc_uct_check's harness: an entity (md + iface) per side, registered
// buffers with a data pattern, progress-until helpers, and the result table.
#pragma once

#include <chrono>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "uct/api/component.h"
#include "uct/api/ep.h"
#include "uct/api/iface.h"

namespace mc::uct::check {

/// One transport on one device of a component.
struct Resource {
  Component* component = nullptr;
  std::string md_name;
  TlResource tl;
};

/// The resource of transport `tl_name` (on device `dev`, or the first one,
/// loopback for network transports). False with `why` when there is none.
bool find_resource(const std::string& tl_name, const std::string& dev, Resource* out,
                   std::string* why);

/// One side: a memory domain and an iface opened on a resource.
class Entity {
 public:
  /// Null (with `why`) when the md or the iface does not open. `on_error`
  /// receives the iface's peer failures.
  static std::unique_ptr<Entity> create(const Resource& r, std::string* why,
                                        ErrorHandler on_error = {});
  MemoryDomain& md() { return *md_; }
  Iface& iface() { return *iface_; }
  const IfaceAttr& attr() const { return attr_; }
  std::vector<uint8_t> device_address() const { return iface_->device_address(); }
  std::vector<uint8_t> iface_address() const { return iface_->iface_address(); }
  /// An endpoint to `peer`'s iface, or to an iface given by its addresses.
  Result<std::unique_ptr<Endpoint>> connect(const Entity& peer) {
    return connect(peer.device_address(), peer.iface_address());
  }
  Result<std::unique_ptr<Endpoint>> connect(const std::vector<uint8_t>& dev_addr,
                                            const std::vector<uint8_t>& iface_addr) {
    return iface_->ep_create(dev_addr, iface_addr);
  }

 private:
  std::unique_ptr<MemoryDomain> md_;
  std::unique_ptr<Iface> iface_;
  IfaceAttr attr_;
};

uint8_t pattern(uint64_t seed, size_t i);

/// A buffer registered with an entity's md (when not empty).
struct Buffer {
  Buffer(Entity& e, size_t length, unsigned access = kAccessAll);
  void fill(uint64_t seed);
  /// Index of the first byte that differs from the pattern of `seed`, or -1.
  ptrdiff_t check(uint64_t seed) const;
  std::vector<uint8_t> packed_rkey(Entity& e) const;
  uint64_t address() const { return reinterpret_cast<uintptr_t>(data.data()); }
  std::vector<uint8_t> data;
  std::unique_ptr<MemHandle> memh;
};

/// A completion one can wait on.
struct WaitCompletion {
  WaitCompletion();
  bool done() const { return fired; }
  Completion comp;
  bool fired = false;
};

using Entities = std::vector<Entity*>;

/// Progresses `entities` until `done()` or the timeout; returns done(). Yields
/// the CPU while nothing happens, so transports' own threads (and a peer
/// process, on few cores) can run.
bool progress_until(const std::function<bool()>& done, const Entities& entities,
                    std::chrono::milliseconds timeout = std::chrono::seconds(30));
/// The final status of an operation that returned `posted` with `c`.
Status wait_op(Status posted, WaitCompletion& c, const Entities& entities);
/// Flushes `ep` and waits for it.
Status flush_and_wait(Endpoint& ep, const Entities& entities);

/// The sizes moved for one operation family within [min, max]: 0, 1, 7, 8,
/// max_short, max_short + 1, max_bcopy, 1 MiB, 64 MiB.
std::vector<size_t> test_sizes(const OpLimits& limits, size_t min, size_t max);

/// The pass/fail table: one row per operation and size.
class Table {
 public:
  /// Records one row; `why` says what went wrong (empty when it passed).
  void add(const std::string& op, size_t size, bool pass, const std::string& why = {});
  void skip(const std::string& op, const std::string& why);
  /// Prints the table and the "N passed, N failed" line.
  void print() const;
  size_t failed() const { return failed_; }

 private:
  struct Row {
    std::string op, size, result, why;
  };
  std::vector<Row> rows_;
  size_t passed_ = 0, failed_ = 0;
};

}  // namespace mc::uct::check
