// SPDX-License-Identifier: Apache-2.0
// A test double of the GPU, for machines without one: a UCT component whose
// memory domain hands out "device memory" (host memory it reports, and
// detects, as MemType::Cuda) and whose connect-to-self iface copies between
// host and that memory like cuda_copy, completing each copy asynchronously
// from progress(). Linked into mc_gtest; given to Context through
// ContextParams::components. Only the hardware is fake: UCP's staging code
// runs as it would over cuda_copy.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "uct/api/component.h"
#include "uct/api/md.h"

namespace mc::ucp {
class Context;
}

namespace mc::ucp::test {

/// Transport name of the fake copy iface (MC_TLS must allow it).
inline constexpr const char* kFakeGpuTl = "fake_cuda_copy";

/// How the fake fails its copies (tests of the staging protocol's errors).
enum class FakeGpuFault {
  None,
  Async,  ///< the n-th copy completes with IoError
  Post,   ///< posting the n-th copy returns IoError
};

/// Process-wide knobs and counters of the fake (tests set them; single thread).
struct FakeGpuState {
  FakeGpuFault fault = FakeGpuFault::None;
  size_t fault_at = 0;    ///< the copy (counted from 1) that fails
  size_t copies = 0;      ///< copies posted so far
  size_t completed = 0;   ///< of which completed (with their status)
  size_t max_queued = 0;  ///< most copies waiting for progress() at once
  size_t copied_bytes = 0;
};
FakeGpuState& fake_gpu_state();

/// The component ("fake_gpu", md "fake_gpu"), one per process. Its md's
/// mem_alloc(n, MemType::Cuda, ...) gives the "device memory".
uct::Component* fake_gpu_component();

/// `n` bytes of "device memory" from the fake md of `ctx` (a context made
/// with fake_gpu_component()); null when it has none or the allocation fails.
std::unique_ptr<uct::MemHandle> fake_vram(Context& ctx, size_t n);

/// "Device memory" of a fake md of the test's own: a context's or an
/// engine's fake md registers it as cuda memory.
class FakeVram {
 public:
  /// `length` bytes; null when the md or the allocation fails.
  static std::unique_ptr<FakeVram> alloc(size_t length);
  ~FakeVram() { mem_.reset(); }  // before its md
  uint8_t* data() const { return static_cast<uint8_t*>(mem_->address()); }
  size_t length() const { return mem_->length(); }

 private:
  FakeVram() = default;
  std::unique_ptr<uct::MemoryDomain> md_;
  std::unique_ptr<uct::MemHandle> mem_;
};

}  // namespace mc::ucp::test
