// SPDX-License-Identifier: Apache-2.0
// TransferEngine::Impl: file (nvmeof) segments. A segment registered as
// <prefix>/nvmeof/<name> is a list of files; its offset space is the files
// laid end to end (file 0 at [0, len0), file 1 at [len0, len0 + len1), ...).
// Each file is opened at the path local_path_map gives for this engine
// (local_server_name, then its host part), or at file_path when this engine
// is the segment's server_name, and registered with the nvmeof md of this
// process; tasks are split at file boundaries (and at the transport's
// largest request) into put/get zcopy on the nvmeof endpoint, progressed by
// the progress thread. The owner's CPU takes no part: the file is mounted
// here. GPU memory goes the same way when the nvmeof iface accesses it
// (cuFile: its access_mem_types has Cuda), else through host bounce buffers
// (engine_file_staged.cc).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "ucp/te/engine.h"
#include "ucp/te/file_io_op.h"
#include "ucs/log/log.h"
#include "ucs/sys/sys.h"
#include "uct/api/component.h"
#include "uct/base/component_loader.h"

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

Status TransferEngine::Impl::open_file_transport() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (file_ep_) return Status::Ok;
  }
  uct::Component* comp = uct::find_component("nvmeof");
  if (comp == nullptr) {
    MC_LOG(error) << "transfer engine: file segments need the nvmeof transport, which is not "
                     "loaded (built without liburing? see mc_info -m)";
    return Status::Unsupported;
  }
  MC_ASSIGN_OR_RETURN(ucs::config::Sources sources, ucs::config::Sources::from_process());
  MC_ASSIGN_OR_RETURN(std::unique_ptr<uct::MemoryDomain> md, comp->md_open("nvmeof", sources));
  uct::IfaceParams params;
  params.tl_name = "nvmeof";
  params.dev_name = "file";
  params.sources = &sources;
  MC_ASSIGN_OR_RETURN(std::unique_ptr<uct::Iface> iface, md->iface_open(params));
  MC_ASSIGN_OR_RETURN(std::unique_ptr<uct::Endpoint> ep,
                      iface->ep_create(iface->device_address(), iface->iface_address()));
  const uct::MemTypeMask mem_types = iface->query().access_mem_types;
  MC_LOG(info) << "transfer engine: file segments: GPU memory "
               << ((mem_types & uct::mem_type_bit(uct::MemType::Cuda))
                       ? "moves directly (nvmeof with cuFile)"
                       : "goes through host bounce buffers (nvmeof without cuFile: mc_info -d)");
  std::lock_guard<std::mutex> lock(mu_);
  file_mem_types_ = mem_types;
  file_md_ = std::move(md);
  file_iface_ = std::move(iface);
  file_ep_ = std::move(ep);
  return Status::Ok;
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
  MC_RETURN_IF_ERROR(open_file_transport());
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
    Result<std::unique_ptr<uct::MemHandle>> memh = Status::Rejected;
    if (::access(path.c_str(), W_OK) == 0) memh = file_md_->mem_reg_file(path, uct::kAccessAll);
    if (memh.ok()) {
      f.writable = true;
    } else {
      memh = file_md_->mem_reg_file(path, uct::kAccessLocal | uct::kAccessRemoteRead);
    }
    if (!memh.ok()) {
      MC_LOG(error) << "transfer engine: openSegment('" << name << "'): cannot open buffer " << i
                    << " at '" << path << "': " << memh.status();
      return memh.status();
    }
    f.file_length = (*memh)->length();
    if (f.file_length < f.length) {
      MC_LOG(warn) << "transfer engine: segment '" << name << "': '" << path << "' has "
                   << f.file_length << " bytes, its descriptor says " << f.length
                   << " (truncated?); tasks past " << f.file_length << " are INVALID";
    }
    std::vector<uint8_t> packed;
    MC_RETURN_IF_ERROR(file_md_->mkey_pack(**memh, &packed));
    MC_ASSIGN_OR_RETURN(f.rkey, file_md_->rkey_unpack(packed));
    f.memh = std::move(*memh);
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
  // Local memory: host memory is read and written by the nvmeof transport
  // itself (the CPU / the kernel); GPU memory too with cuFile, else staged.
  return validate_file_staging_locked(req, task, why);
}

void TransferEngine::Impl::post_file_task_locked(Task* task, RemoteSegment& seg) {
  if (!file_ep_) {  // not expected: a file segment is open
    MC_LOG(error) << "transfer engine: the nvmeof transport is closed";
    finish_locked(task, FAILED);
    return;
  }
  if (!(file_mem_types_ & uct::mem_type_bit(task->file_mem))) {
    post_file_staged_locked(task, seg);
    return;
  }
  const bool write = task->req.opcode == TransferRequest::WRITE;
  const std::vector<te::FilePiece> pieces =
      te::file_pieces(seg, task->buffer_index, task->req.target_offset, task->req.length,
                      static_cast<uint8_t*>(task->req.source));
  task->status = PENDING;
  task->first_error = Status::Ok;
  task->engine = this;
  task->file_comp = uct::Completion{};
  task->file_comp.arg = task;
  task->file_comp.func = [](uct::Completion* c) {
    Task* t = static_cast<Task*>(c->arg);
    static_cast<TransferEngine::Impl*>(t->engine)->on_file_done_locked(t, c->status);
  };
  // One count per piece and one held while posting, so that nothing ends
  // the task before every piece is posted.
  task->file_comp.count = static_cast<int>(pieces.size()) + 1;
  inflight_++;
  file_inflight_++;
  // GPU memory is named by a handle of its type (nvmeof registers no local
  // memory; it reads the type, for cuFile); read only while posting.
  const uct::MemHandle gpu(task->req.source, task->req.length, uct::kAccessLocal, task->file_mem);
  const uct::MemHandle* memh = task->file_mem != uct::MemType::Host ? &gpu : nullptr;
  Status failed = Status::Ok;
  for (const te::FilePiece& p : pieces) {
    if (failed != Status::Ok) {
      uct::completion_update(&task->file_comp, failed);  // not posted
      continue;
    }
    uct::Iov iov{p.local, p.length, memh};
    const Status s = write
                         ? file_ep_->put_zcopy(&iov, 1, p.offset, *p.file->rkey, &task->file_comp)
                         : file_ep_->get_zcopy(&iov, 1, p.offset, *p.file->rkey, &task->file_comp);
    if (s == Status::InProgress) continue;
    if (s != Status::Ok) {
      MC_LOG(error) << "transfer engine: " << (write ? "write to" : "read from") << " '"
                    << p.file->path << "' (" << p.length << " bytes at " << p.offset
                    << ") not started: " << s;
      failed = s;
    }
    uct::completion_update(&task->file_comp, s);
  }
  uct::completion_update(&task->file_comp, Status::Ok);
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
                << (!(file_mem_types_ & uct::mem_type_bit(task->file_mem))
                        ? " (staged through host memory: the log above names the failed copy, "
                          "or the file and the errno)"
                        : " (the nvmeof log above names the file and the errno)");
  if (s != Status::Ok) task->end_error = s;
  finish_locked(task, FAILED);
}

void TransferEngine::Impl::drain_file_ops_locked(std::unique_lock<std::mutex>& lock) {
  (void)lock;  // held: the iface is progressed under mu_
  if (!file_iface_) return;
  const uint64_t give_up = ucs::monotonic_ns() + 30'000'000'000ULL;
  while (file_inflight_ > 0 && ucs::monotonic_ns() < give_up) {
    // Staged tasks also wait for the worker's memory-type copies.
    unsigned events = file_iface_->progress();
    if (worker_) events += worker_->progress();
    if (events == 0) std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  if (file_inflight_ > 0) {
    MC_LOG(warn) << "transfer engine: " << file_inflight_ << " file operations did not end";
  }
}

}  // namespace mc
