// SPDX-License-Identifier: Apache-2.0
// TransferEngine::Impl: file (nvmeof) segments. A segment registered as
// <prefix>/nvmeof/<name> is a list of files; its offset space is the files
// laid end to end (file 0 at [0, len0), file 1 at [len0, len0 + len1), ...).
// Each file is opened at the path local_path_map gives for this engine
// (local_server_name, then its host part), or at file_path when this engine
// is the segment's server_name, with the worker's file transport
// (Worker::file_open: nvmeof in this process). A task is cut at the file
// boundaries into the runs of one Worker::file_io request, progressed with
// the worker by the progress thread; the worker moves GPU memory directly
// (cuFile) or through host bounce buffers. The owner's CPU takes no part:
// the file is mounted here.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "ucp/te/engine.h"
#include "ucp/te/location.h"
#include "ucs/log/log.h"
#include "ucs/sys/sys.h"

namespace mc {

Result<std::string> TransferEngine::Impl::local_file_path(const std::string& segment,
                                                          const metadata::FileSegmentDesc& desc,
                                                          size_t index) const {
  const metadata::FileBufferDesc& b = desc.buffers[index];
  for (const std::string& key : {server_name_, host_}) {
    auto it = b.local_path_map.find(key);
    if (it != b.local_path_map.end() && !it->second.empty()) return it->second;
  }
  if ((desc.server_name == server_name_ || desc.server_name == host_) && !b.file_path.empty()) {
    return b.file_path;
  }
  MC_LOG(error) << "transfer engine: openSegment('" << segment << "'): buffer " << index
                << " (file_path '" << b.file_path << "' on server '" << desc.server_name
                << "') has no local_path_map entry for this host ('" << server_name_ << "'"
                << (host_ != server_name_ ? " or '" + host_ + "'" : std::string()) << ")"
                << "; add one with mc_nvmeof_register mount";
  return Status::NoElem;
}

Result<std::unique_ptr<RemoteSegment>> TransferEngine::Impl::make_file_segment(
    const std::string& name, const std::string& json) {
  std::string error;
  Result<metadata::FileSegmentDesc> desc = metadata::decode_file_segment(json, &error);
  if (!desc.ok()) {
    MC_LOG(error) << "transfer engine: openSegment('" << name
                  << "'): bad nvmeof descriptor: " << error;
    return desc.status();
  }
  if (desc->buffers.empty()) {
    MC_LOG(error) << "transfer engine: openSegment('" << name
                  << "'): the file segment has no "
                     "buffers";
    return Status::InvalidParam;
  }
  auto seg = std::make_unique<RemoteSegment>();
  seg->name = name;
  seg->file = true;
  uint64_t offset = 0;
  for (size_t i = 0; i < desc->buffers.size(); ++i) {
    MC_ASSIGN_OR_RETURN(std::string path, local_file_path(name, *desc, i));
    FileBuffer f;
    f.path = path;
    f.offset = offset;
    f.length = desc->buffers[i].length;
    // Writable when the file lets this process write it; else read-only
    // (WRITE tasks to it are INVALID).
    // (access() first, so that a read-only file logs no open error.)
    Result<std::unique_ptr<ucp::File>> file = Status::Rejected;
    {
      std::lock_guard<std::mutex> lock(mu_);  // the worker's, as every call of it
      if (::access(path.c_str(), W_OK) == 0) file = worker_->file_open(path, true);
      if (!file.ok() && file.status() != Status::Unsupported) {
        file = worker_->file_open(path, false);
      }
    }
    if (!file.ok()) {
      MC_LOG(error) << "transfer engine: openSegment('" << name << "'): cannot open buffer " << i
                    << " at '" << path << "': " << file.status();
      return file.status();
    }
    f.writable = (*file)->writable();
    f.file_length = (*file)->length();
    if (f.file_length < f.length) {
      MC_LOG(warn) << "transfer engine: segment '" << name << "': '" << path << "' has "
                   << f.file_length << " bytes, its descriptor says " << f.length
                   << " (truncated?); tasks past " << f.file_length << " are INVALID";
    }
    f.file = std::move(*file);
    if (offset + f.length < offset) {
      MC_LOG(error) << "transfer engine: openSegment('" << name << "'): lengths overflow";
      return Status::InvalidParam;
    }
    offset += f.length;
    seg->files.push_back(std::move(f));
  }
  seg->file_desc = std::move(*desc);
  if (!seg->files.empty()) {
    MC_LOG(info) << "transfer engine: file segment '" << name << "' (server '"
                 << seg->file_desc.server_name << "'): " << seg->files.size() << " files, "
                 << offset << " bytes, first at '" << seg->files[0].path << "'";
  }
  return seg;
}

bool TransferEngine::Impl::validate_file_locked(const TransferRequest& req,
                                                const RemoteSegment& seg, Task* task,
                                                std::string* why) {
  const uint64_t end = req.target_offset + req.length;
  const uint64_t total = seg.files.empty() ? 0 : seg.files.back().offset + seg.files.back().length;
  if (end < req.target_offset || end > total) {
    *why = "outside the file segment's " + std::to_string(total) + " bytes";
    return false;
  }
  bool first = true;
  for (size_t i = 0; i < seg.files.size(); ++i) {
    const FileBuffer& f = seg.files[i];
    if (f.offset + f.length <= req.target_offset || f.offset >= end) continue;
    if (first) task->buffer_index = i;
    first = false;
    if (req.opcode == TransferRequest::WRITE && !f.writable) {
      *why = "'" + f.path + "' is read-only here";
      return false;
    }
    const uint64_t to = std::min(end, f.offset + f.length) - f.offset;
    if (to > f.file_length) {
      *why = "'" + f.path + "' has " + std::to_string(f.file_length) +
             " bytes, fewer than its descriptor's " + std::to_string(f.length) + " (truncated?)";
      return false;
    }
  }
  // Local memory: host memory, and GPU memory where the nvmeof transport
  // reads and writes it itself (cuFile); other GPU memory goes through host
  // bounce buffers. The worker decides which (Worker::file_route).
  const LocalBuffer* b = buffer_at_locked(req.source);
  const std::string location = b ? b->location : std::string();
  uct::MemType mem = uct::MemType::Host;
  if (te::location_is_gpu(location)) {
    mem = uct::MemType::Cuda;
  } else if (location.empty()) {
    mem = worker_->detect_mem_type(req.source, req.length);  // not registered
  }
  task->file_mem = mem;
  const Result<ucp::FileRoute> route = worker_->file_route(mem);
  if (route.ok()) return true;
  const std::string what = location.empty() ? std::string("detected as ") + uct::mem_type_name(mem)
                                            : "registered at " + location;
  if (route.status() == Status::Unsupported) {
    *why = "the local buffer is GPU memory (" + what +
           "), which file segments move through host bounce buffers with a memory-type "
           "transport (nvmeof does not use cuFile here: mc_info -d), and none is enabled "
           "(cuda_copy: see MC_TLS and mc_info -d)";
  } else {
    *why = "the local buffer is GPU memory (" + what +
           ") and its staging through host memory cannot be set up: " +
           ucs::status_string(route.status());
  }
  return false;
}

// The task's range cut at the segment's file boundaries, as runs of
// Worker::file_io: the worker cuts them at the transport's largest request
// and moves GPU memory directly or staged, as file_route said at submit.
void TransferEngine::Impl::post_file_task_locked(Task* task, RemoteSegment& seg) {
  ucp::FileIo io;
  io.write = task->req.opcode == TransferRequest::WRITE;
  io.mem_type = task->file_mem;
  io.memh = task->local ? task->local->memh.get() : nullptr;
  uint64_t pos = task->req.target_offset;
  const uint64_t end = pos + task->req.length;
  auto* local = static_cast<uint8_t*>(task->req.source);
  for (size_t i = task->buffer_index; i < seg.files.size() && pos < end; ++i) {
    const FileBuffer& f = seg.files[i];
    if (pos < f.offset || pos >= f.offset + f.length) continue;  // not expected: checked at submit
    const uint64_t n = std::min(end, f.offset + f.length) - pos;
    io.runs.push_back({f.file.get(), pos - f.offset, local + (pos - task->req.target_offset),
                       static_cast<size_t>(n)});
    pos += n;
  }
  task->status = PENDING;
  task->first_error = Status::Ok;
  inflight_++;
  file_inflight_++;
  ucp::RequestParams rp;
  // A posted file task has no deadline: the file's I/O ends on its own.
  rp.timeout = ucs::config::Duration::max();
  rp.callback = [this, task](Status s) { on_file_done_locked(task, s); };
  // The callback may run inside file_io (an error at once, a copy failing).
  Result<std::shared_ptr<ucp::Request>> r = worker_->file_io(io, rp);
  if (!r.ok()) on_file_done_locked(task, r.status());
}

void TransferEngine::Impl::on_file_done_locked(Task* task, Status s) {
  inflight_--;
  file_inflight_--;
  auto seg = segments_.find(task->req.target_id);
  if (s == Status::Ok && !stop_) {
    if (seg != segments_.end()) seg->second->file_bytes += task->req.length;
    finish_locked(task, COMPLETED);
    return;
  }
  MC_LOG(error) << "transfer engine: "
                << (task->req.opcode == TransferRequest::WRITE ? "WRITE" : "READ") << " of "
                << task->req.length << " bytes at offset " << task->req.target_offset
                << " of file segment '" << (seg != segments_.end() ? seg->second->name : "?")
                << "' failed: "
                << (stop_ && s == Status::Ok ? "engine stopping" : ucs::status_string(s))
                << " (the log above names the file and the errno, or the failed copy of "
                   "memory staged through host memory)";
  if (s != Status::Ok) task->end_error = s;
  finish_locked(task, FAILED);
}

void TransferEngine::Impl::drain_file_ops_locked(std::unique_lock<std::mutex>& lock) {
  (void)lock;  // held: the worker is progressed under mu_
  const uint64_t give_up = ucs::monotonic_ns() + 30'000'000'000ULL;
  while (file_inflight_ > 0 && ucs::monotonic_ns() < give_up) {
    if (worker_->progress() == 0) std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  if (file_inflight_ > 0) {
    MC_LOG(warn) << "transfer engine: " << file_inflight_ << " file operations did not end";
  }
}

}  // namespace mc
