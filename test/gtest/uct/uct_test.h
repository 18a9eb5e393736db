// SPDX-License-Identifier: Apache-2.0
// Test harness for UCT: every available transport/device pair as a test
// parameter, and an Entity (md + iface) per side of a connection.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "uct/api/component.h"
#include "uct/api/ep.h"
#include "uct/api/iface.h"

namespace mc::uct::test {

/// One transport on one device, as the conformance suite runs it.
struct Resource {
  std::string component;
  std::string md_name;
  TlResource tl;
  /// "tcp_lo", "sm_memory", ... (gtest parameter names).
  std::string name() const;
};

/// Every resource of every loaded component. Network transports run on the
/// loopback device only, so tests never leave this machine.
std::vector<Resource> available_resources();

/// One side: a memory domain and an iface opened on a resource.
class Entity {
 public:
  /// Opens the md and the iface; fails the calling test on error.
  static std::unique_ptr<Entity> create(const Resource& resource, ErrorHandler on_error = {});

  MemoryDomain& md() { return *md_; }
  Iface& iface() { return *iface_; }
  const IfaceAttr& attr() const { return attr_; }

  /// An endpoint from this entity to `peer`'s iface.
  Result<std::unique_ptr<Endpoint>> connect(const Entity& peer);
  /// An endpoint to an iface given by its packed addresses.
  Result<std::unique_ptr<Endpoint>> connect(const std::vector<uint8_t>& dev_addr,
                                            const std::vector<uint8_t>& iface_addr);

  std::vector<uint8_t> device_address() const { return iface_->device_address(); }
  std::vector<uint8_t> iface_address() const { return iface_->iface_address(); }

 private:
  std::unique_ptr<MemoryDomain> md_;
  std::unique_ptr<Iface> iface_;
  IfaceAttr attr_;
};

/// A buffer registered with an entity's md, filled with a pattern.
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

/// Progresses `entities` until `done()` holds or `timeout` passes; returns done().
bool progress_until(const std::function<bool()>& done, std::initializer_list<Entity*> entities,
                    std::chrono::milliseconds timeout = std::chrono::seconds(30));

/// A completion the test can wait on.
struct TestCompletion {
  TestCompletion();
  bool done() const { return fired; }
  Completion comp;
  bool fired = false;
};

/// Waits for an operation's result: Ok at once, InProgress until `c` fires.
/// Returns the final status.
Status wait_op(Status posted, TestCompletion& c, std::initializer_list<Entity*> entities);

/// Flushes `ep` and waits; returns the final status.
Status flush_and_wait(Endpoint& ep, std::initializer_list<Entity*> entities);

/// Parameterised fixture: a sender and a receiver entity on GetParam().
class UctTest : public testing::TestWithParam<Resource> {
 protected:
  void SetUp() override;
  void TearDown() override;
  bool has(uint64_t cap) const { return (sender_->attr().cap & cap) == cap; }
  /// The side that receives: the receiver, or the sender itself for self.
  Entity& target() { return receiver_ ? *receiver_ : *sender_; }
  /// Progresses both sides until `done` or the deadline.
  bool wait(const std::function<bool()>& done) {
    return receiver_ ? progress_until(done, {sender_.get(), receiver_.get()})
                     : progress_until(done, {sender_.get()});
  }
  Status wait_op(Status posted, TestCompletion& c) {
    return receiver_ ? test::wait_op(posted, c, {sender_.get(), receiver_.get()})
                     : test::wait_op(posted, c, {sender_.get()});
  }
  Status flush() {
    return receiver_ ? flush_and_wait(*ep_, {sender_.get(), receiver_.get()})
                     : flush_and_wait(*ep_, {sender_.get()});
  }

  std::unique_ptr<Entity> sender_;
  std::unique_ptr<Entity> receiver_;
  std::unique_ptr<Endpoint> ep_;
};

/// The sizes the suite moves for one operation family and protocol, within
/// [min, max]: 0, 1, 7, 8, max_short, max_short + 1, max_bcopy, 1 MiB, 64 MiB.
std::vector<size_t> test_sizes(const OpLimits& limits, size_t min, size_t max);

/// gtest name generator for Resource parameters.
std::string resource_name(const testing::TestParamInfo<Resource>& info);

}  // namespace mc::uct::test

namespace mc::uct::test {

/// A target entity in a forked child process: it registers a buffer filled
/// with pattern `kChildSeed`, sends its addresses and packed rkey through a
/// pipe, and progresses until told to finish. At finish it checks that the
/// first half of its buffer holds pattern `kParentSeed` (written by the
/// parent) and that an active message of `kChildAmLength` bytes arrived;
/// its exit code says whether both held.
class ChildTarget {
 public:
  static constexpr uint64_t kChildSeed = 11;
  static constexpr uint64_t kParentSeed = 22;
  static constexpr uint8_t kAmId = 7;
  static constexpr size_t kAmLength = 100;

  /// Forks the child; false (with a test failure) when it did not start.
  bool start(const Resource& resource, size_t buffer_size);
  /// Tells the child to check and exit; returns its exit code (-1: killed).
  int finish();
  /// SIGKILLs the child and reaps it.
  void kill();
  ~ChildTarget();

  std::vector<uint8_t> dev_addr, iface_addr, rkey;
  uint64_t remote_address = 0;
  size_t length = 0;

 private:
  pid_t pid_ = -1;
  int to_child_ = -1;
};

}  // namespace mc::uct::test
