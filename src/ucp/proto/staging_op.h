// SPDX-License-Identifier: Apache-2.0
// StagingOp: a put or get of memory no network lane can access (GPU memory),
// pipelined through registered host bounce buffers: a memory-type transport
// copies each fragment, a network protocol moves it.
#pragma once

#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "ucp/proto/proto_select.h"
#include "ucp/proto/request_op.h"
#include "ucp/proto/staging_pool.h"
#include "uct/api/ep.h"

namespace mc::ucp::proto {

/// Makes the network operation of one fragment: `length` bytes between the
/// bounce buffer `bounce` (registered in the pool) and `remote_addr`.
using StagingNetwork = std::function<ucs::Result<std::unique_ptr<RequestOp>>(
    void* bounce, size_t length, uint64_t remote_addr)>;

/// What one staged put or get moves and how.
struct StagingParams {
  Op op = Op::Put;         ///< Put (copy out, then send) or Get (receive, then copy in)
  void* buffer = nullptr;  ///< the user's buffer (device memory)
  size_t length = 0;
  uint64_t remote_addr = 0;
  size_t frag_size = 0;                       ///< <= pool->frag_size()
  size_t depth = 1;                           ///< fragments in flight (bounce buffers held at most)
  uct::Endpoint* copy_ep = nullptr;           ///< the memory-type transport's endpoint to itself
  uct::MemoryDomain* copy_md = nullptr;       ///< its memory domain
  size_t copy_md_index = 0;                   ///< into Context::mds()
  const uct::MemHandle* user_memh = nullptr;  ///< the user's registration on copy_md, if any
  std::shared_ptr<StagingPool> pool;
  StagingNetwork network;
};

/// Each fragment holds one bounce buffer: a put copies it out of the user's
/// buffer and then sends it, a get receives it and then copies it in. Up to
/// `depth` fragments are in flight, so the copy of one overlaps the network
/// transfer of the others. A failure of either stage fails the request with
/// that status (after what is in flight completes); the network stage
/// re-issues slices on other lanes as RmaOp does. Orphaned (its endpoint
/// destroyed), it still counts its copies in flight: the memory-type
/// transport belongs to the worker and completes them.
class StagingOp : public RequestOp {
 public:
  explicit StagingOp(StagingParams params);
  ~StagingOp() override;

  ucs::Status progress() override;
  void abort() override;
  size_t in_flight() const override;
  void orphan() override;

  /// Most fragments that were in flight at once (tests: the pipeline overlaps).
  size_t max_active() const { return max_active_; }

 private:
  enum class State { Free, CopyWait, Copying, NetWait, Net };
  struct Stage {
    State state = State::Free;
    size_t offset = 0;
    size_t length = 0;
    void* bounce = nullptr;
    uct::Completion comp;
    std::unique_ptr<RequestOp> net;
    StagingOp* owner = nullptr;
  };

  static void on_copy(uct::Completion* comp);
  ucs::Status setup();
  ucs::Status advance(Stage& st);
  ucs::Status post_copy(Stage& st);
  void finish(Stage& st);
  void release(Stage& st);
  void fail(ucs::Status s);

  StagingParams p_;
  std::vector<Stage> stages_;                 ///< never resized: completions point into it
  std::unique_ptr<uct::MemHandle> own_memh_;  ///< the user's buffer on copy_md, made here
  std::unique_ptr<uct::Rkey> user_rkey_;      ///< the copy transport's key of the user's buffer
  /// Network ops that ended with operations still in flight (a slice moved
  /// to another lane): their bounce buffers go back once those complete.
  std::vector<std::pair<std::unique_ptr<RequestOp>, void*>> draining_;
  size_t next_offset_ = 0;
  size_t done_bytes_ = 0;
  size_t max_active_ = 0;
  bool set_up_ = false;
  bool aborted_ = false;
  bool orphaned_ = false;
  ucs::Status error_ = ucs::Status::Ok;
};

}  // namespace mc::ucp::proto
