// SPDX-License-Identifier: Apache-2.0
// TransferEngine::Impl: file-segment tasks of GPU memory the nvmeof
// transport cannot move itself (cuFile, GPUDirect Storage, not in use: see
// MC_NVMEOF_CUFILE). A task whose local buffer is such GPU memory
// (registered as cuda:N, or detected when not registered) goes through the
// worker's pinned host bounce buffers: UCP's staging protocol
// (proto::StagingOp) with the worker's memory-type transport (cuda_copy)
// copying each fragment, and a FileIoOp writing or reading that fragment's
// bounce buffer with the nvmeof endpoint. A WRITE copies a fragment
// VRAM -> bounce, then writes it to the file; a READ reads the file into a
// bounce buffer, then copies it to VRAM. Fragments are MC_RNDV_FRAG_SIZE's
// cuda entry, MC_STAGING_DEPTH of them in flight, so the copy of one
// overlaps the file I/O of the others. The request is the worker's,
// progressed by the progress thread with the nvmeof iface; like every
// request it completes once nothing of it is in flight, after a failure too
// (Request), so it ends the task only then.
#include "ucp/core/worker.h"
#include "ucp/proto/staging_op.h"
#include "ucp/te/engine.h"
#include "ucp/te/file_io_op.h"
#include "ucs/log/log.h"

namespace mc {

// Sets task->file_mem. GPU memory the nvmeof iface does not access: a
// memory-type transport must stage it (else INVALID, with why); its bounce
// pool is made here, once.
bool TransferEngine::Impl::validate_file_staging_locked(const TransferRequest& req, Task* task,
                                                        std::string* why) {
  std::string location;
  const uintptr_t a = reinterpret_cast<uintptr_t>(req.source);
  if (auto next = buffers_.upper_bound(a); next != buffers_.begin()) {
    const LocalBuffer& b = *std::prev(next)->second;
    if (a - std::prev(next)->first < b.length) location = b.location;
  }
  uct::MemType mem = uct::MemType::Host;
  if (location.starts_with("cuda")) {
    mem = uct::MemType::Cuda;
  } else if (location.empty()) {
    mem = worker_->detect_mem_type(req.source, req.length);  // not registered
  }
  task->file_mem = mem;
  if (file_mem_types_ & uct::mem_type_bit(mem)) return true;  // host, or GPU with cuFile
  const std::string what = location.empty() ? std::string("detected as ") + uct::mem_type_name(mem)
                                            : "registered at " + location;
  Result<ucp::StagingPath> path = ucp::impl(*worker_).staging_path(mem);
  if (path.status() == Status::Unsupported) {
    *why = "the local buffer is GPU memory (" + what +
           "), which file segments move through host bounce buffers with a memory-type "
           "transport (nvmeof does not use cuFile here: mc_info -d), and none is enabled "
           "(cuda_copy: see MC_TLS and mc_info -d)";
    return false;
  }
  if (!path.ok()) {
    *why = "the local buffer is GPU memory (" + what +
           ") and its staging through host memory cannot be set up: " +
           ucs::status_string(path.status());
    return false;
  }
  return true;
}

void TransferEngine::Impl::post_file_staged_locked(Task* task, RemoteSegment& seg) {
  const bool write = task->req.opcode == TransferRequest::WRITE;
  task->status = PENDING;
  task->first_error = Status::Ok;
  inflight_++;
  file_inflight_++;
  Result<ucp::StagingPath> path = ucp::impl(*worker_).staging_path(task->file_mem);
  if (!path.ok()) {  // not expected: checked at submit
    MC_LOG(error) << "transfer engine: no staging of " << uct::mem_type_name(task->file_mem)
                  << " memory for a file task: " << path.status();
    on_file_done_locked(task, path.status());
    return;
  }
  // The remote address is in the segment's offset space.
  ucp::proto::StagingParams p = path->params(
      write ? ucp::proto::Op::Put : ucp::proto::Op::Get, task->req.source, task->req.length,
      task->req.target_offset, task->local ? task->local->memh.get() : nullptr);
  // The segment and the endpoint outlive the task: a segment with tasks in
  // flight is not closed, nor the nvmeof transport with file tasks.
  p.network = [ep = file_ep_.get(), write, s = &seg, first = task->buffer_index](
                  void* bounce, size_t length,
                  uint64_t offset) -> Result<std::unique_ptr<ucp::proto::RequestOp>> {
    return std::unique_ptr<ucp::proto::RequestOp>(new te::FileIoOp(
        ep, write, te::file_pieces(*s, first, offset, length, static_cast<uint8_t*>(bounce))));
  };
  ucp::RequestParams rp;
  // As the direct path: a posted file task has no deadline.
  rp.timeout = ucs::config::Duration::max();
  rp.callback = [this, task](Status s) { on_file_done_locked(task, s); };
  // The callback may run inside submit (a registration failing at once).
  (void)ucp::impl(*worker_).submit(std::make_unique<ucp::proto::StagingOp>(std::move(p)), rp);
}

}  // namespace mc
