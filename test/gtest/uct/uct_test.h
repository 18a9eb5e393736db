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
#include "tools/uct_check/check_harness.h"
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
/// loopback device only, so tests never leave this machine. Copy engines
/// (cuda_copy) and storage (nvmeof) have their own suites.
std::vector<Resource> available_resources();

/// Sets MC_IB_PROVIDER=soft and a fabric of this process's own
/// (MC_IB_SOFT_FABRIC=gtest-<pid>) unless the environment sets them.
void use_soft_verbs_unless_told();

// The entities, buffers and waits are mc_uct_check's: one harness for the
// installed checker and this suite.
using check::Buffer;
using check::Entity;
using check::flush_and_wait;
using check::progress_until;
using check::test_sizes;
using check::wait_op;
using TestCompletion = check::WaitCompletion;

/// Opens an entity on `resource`; fails the calling test when it does not open.
std::unique_ptr<Entity> make_entity(const Resource& resource, ErrorHandler on_error = {});

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
