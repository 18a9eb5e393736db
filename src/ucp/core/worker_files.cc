// SPDX-License-Identifier: Apache-2.0
// Worker: files (api/file.h). The one decision of how memory reaches files
// is file_route(): directly when the file transport accesses the memory,
// else staged through host bounce buffers (proto::StagingOp, whose network
// stage is the file transport's FileOp).
#include <utility>

#include "ucp/core/file_service.h"
#include "ucp/core/worker.h"
#include "ucs/log/log.h"

namespace mc::ucp {

Status WorkerImpl::open_files() {
  if (files_) return Status::Ok;
  // A transport that did not open once (not loaded) is not tried, nor
  // logged, again.
  if (files_failed_ != Status::Ok) return files_failed_;
  Result<std::unique_ptr<FileService>> fs = FileService::open();
  if (!fs.ok()) {
    files_failed_ = fs.status();
    return files_failed_;
  }
  files_ = std::move(*fs);
  return Status::Ok;
}

Result<std::unique_ptr<File>> WorkerImpl::file_open(const std::string& path, bool writable) {
  std::unique_lock guard = lock();
  MC_RETURN_IF_ERROR(open_files());
  Result<std::unique_ptr<File>> f = files_->open_file(path, writable);
  if (!f.ok()) {
    MC_LOG(error) << "ucp: cannot open '" << path << "' for "
                  << (writable ? "reading and writing" : "reading") << ": " << f.status();
  }
  return f;
}

Result<FileRoute> WorkerImpl::file_route(uct::MemType mem) {
  std::unique_lock guard = lock();
  MC_RETURN_IF_ERROR(open_files());
  if (files_->direct_mem_types() & uct::mem_type_bit(mem)) return FileRoute::Direct;
  MC_RETURN_IF_ERROR(staging_path(mem).status());
  return FileRoute::Staged;
}

Result<std::shared_ptr<Request>> WorkerImpl::file_io(const FileIo& io,
                                                     const RequestParams& params) {
  std::unique_lock guard = lock();
  const Result<FileRoute> routed = file_route(io.mem_type);
  if (routed.status() == Status::Unsupported && files_) {
    MC_LOG(error) << "ucp: file " << (io.write ? "write" : "read") << ": "
                  << uct::mem_type_name(io.mem_type)
                  << " memory cannot reach files: the file transport does not access it (no "
                     "cuFile: mc_info -d) and no enabled memory-type transport copies it "
                     "(cuda_copy: MC_TLS)";
  }
  MC_ASSIGN_OR_RETURN(const FileRoute route, routed);
  std::string why;
  size_t total = 0;
  const Status s = files_->check(io, route == FileRoute::Staged, &total, &why);
  if (s != Status::Ok) {
    MC_LOG(error) << "ucp: file " << (io.write ? "write" : "read") << ": " << why;
    return s;
  }
  if (route == FileRoute::Direct) return submit(files_->direct_op(io, total), params);
  MC_ASSIGN_OR_RETURN(StagingPath path, staging_path(io.mem_type));
  // The staged request's remote addresses are offsets into the runs laid
  // end to end.
  proto::StagingParams p =
      path.params(io.write ? proto::Op::Put : proto::Op::Get, io.runs[0].buffer, total, 0, io.memh);
  p.network = files_->staged_network(io);
  return submit(std::make_unique<proto::StagingOp>(std::move(p)), params);
}

Result<std::unique_ptr<File>> Worker::file_open(const std::string& path, bool writable) {
  return impl(*this).file_open(path, writable);
}
Result<FileRoute> Worker::file_route(uct::MemType mem) {
  return impl(*this).file_route(mem);
}
Result<std::shared_ptr<Request>> Worker::file_io(const FileIo& io, const RequestParams& params) {
  return impl(*this).file_io(io, params);
}

}  // namespace mc::ucp
