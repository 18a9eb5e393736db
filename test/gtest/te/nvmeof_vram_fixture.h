// SPDX-License-Identifier: Apache-2.0
// The fixture of the Transfer Engine tests between "VRAM" and a file
// (nvmeof) segment: two pattern files registered as one segment in a fresh
// metadata server, fake GPU memory (ucp/fake_gpu.h) covering the segment,
// and an engine opened by the test with its own environment.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/services.h"
#include "te/te_test_util.h"
#include "ucp/fake_gpu.h"
#include "ucp/te/test_hooks.h"
#include "ucs/sys/sys.h"
#include "uct/base/component_loader.h"
#include "uct/nvmeof/nvmeof_test_util.h"

namespace mc::te::test {

/// The segment's two files: their lengths (the first one unaligned, so is
/// the boundary) and pattern seeds.
struct FileSegmentSpec {
  std::string name;
  size_t len0;
  size_t len1;
  uint64_t seed0;
  uint64_t seed1;
  size_t total() const { return len0 + len1; }
};

class NvmeofVramFixture : public testing::Test {
 protected:
  explicit NvmeofVramFixture(FileSegmentSpec spec) : spec_(std::move(spec)) {}

  void SetUp() override {
    namespace nt = mc::uct::nvmeof::test;
    if (uct::find_component("nvmeof") == nullptr) GTEST_SKIP() << "nvmeof not built (liburing)";
    ASSERT_TRUE(dir_.ok());
    f0_ = dir_.file("disk0");
    f1_ = dir_.file("disk1");
    ASSERT_TRUE(nt::write_pattern_file(f0_, spec_.len0, spec_.seed0));
    ASSERT_TRUE(nt::write_pattern_file(f1_, spec_.len1, spec_.seed1));
    url_ = services_.start_metadata_server();
    ASSERT_FALSE(url_.empty());
    // Server 127.0.0.1: the engine (127.0.0.1:port) opens the files' paths.
    ASSERT_TRUE(register_file_segment(url_, spec_.name, "127.0.0.1", {f0_, f1_}));
    ucp::test::fake_gpu_state() = ucp::test::FakeGpuState{};
    // "Device memory" of a fake md of the test's own; the engine's fake md
    // registers it when it is registered as cuda:0.
    vram_ = ucp::test::FakeVram::alloc(spec_.total() + 64);
    ASSERT_TRUE(vram_) << "fake GPU memory";
  }

  void TearDown() override {
    engine_.reset();
    set_test_components({});
    vram_.reset();
    ucp::test::fake_gpu_state() = ucp::test::FakeGpuState{};
  }

  /// An engine on `components` under the environment `vars` (also while
  /// it opens the segment, which opens the nvmeof md), the segment open in
  /// seg_ and the VRAM registered as cuda:0.
  void open_engine(const std::vector<uct::Component*>& components,
                   const std::map<std::string, std::string>& vars) {
    set_test_components(components);
    ScopedEnv scoped(vars);
    engine_ = std::make_unique<TransferEngine>();
    auto port = ucs::find_free_tcp_port();
    ASSERT_EQ(engine_->init(url_, "127.0.0.1:" + std::to_string(port.value_or(1))), 0);
    seg_ = engine_->openSegment(spec_.name);
    ASSERT_GE(seg_, 0);
    ASSERT_EQ(engine_->registerLocalMemory(vram(), vram_->length(), "cuda:0"), 0);
  }

  TransferStatus run(TransferRequest::OpCode op, uint8_t* local, uint64_t offset, size_t length) {
    std::vector<TransferStatus> r = run_batch(*engine_, {{op, local, seg_, offset, length}});
    return r.size() == 1 ? r[0] : TransferStatus{INVALID, SIZE_MAX};
  }

  uint8_t* vram() const { return vram_->data(); }

  /// The segment as the files hold it now, read with read().
  std::vector<uint8_t> files() const {
    namespace nt = mc::uct::nvmeof::test;
    std::vector<uint8_t> got = nt::read_file(f0_);
    const std::vector<uint8_t> g1 = nt::read_file(f1_);
    got.insert(got.end(), g1.begin(), g1.end());
    return got;
  }

  /// The segment as SetUp() wrote it.
  std::vector<uint8_t> initial_segment() const {
    namespace nt = mc::uct::nvmeof::test;
    std::vector<uint8_t> want = nt::pattern_bytes(spec_.seed0, 0, spec_.len0);
    const std::vector<uint8_t> w1 = nt::pattern_bytes(spec_.seed1, 0, spec_.len1);
    want.insert(want.end(), w1.begin(), w1.end());
    return want;
  }

  FileSegmentSpec spec_;
  mc::test::Services services_;
  mc::uct::nvmeof::test::TempDir dir_;
  std::string f0_, f1_, url_;
  std::unique_ptr<ucp::test::FakeVram> vram_;
  std::unique_ptr<TransferEngine> engine_;
  SegmentHandle seg_ = -1;
};

}  // namespace mc::te::test
