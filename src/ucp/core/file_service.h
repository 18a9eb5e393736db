// SPDX-License-Identifier: Apache-2.0
// FileService: a worker's file transport (nvmeof), opened on the first
// Worker::file_open or file_route: its memory domain, iface and endpoint to
// itself, the files registered with it (FileImpl), and the ops of
// Worker::file_io (proto/file_op.h). Not installed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ucp/api/file.h"
#include "ucp/proto/file_op.h"
#include "ucp/proto/staging_op.h"
#include "uct/api/ep.h"
#include "uct/api/iface.h"
#include "uct/api/md.h"

namespace mc::ucp {

/// A file registered with the file transport's memory domain.
class FileService;

/// A file registered with `owner`'s memory domain.
class FileImpl : public File {
 public:
  FileImpl(const FileService* owner, std::string path, bool writable,
           std::unique_ptr<uct::MemHandle> memh, std::unique_ptr<uct::Rkey> rkey)
      : owner_(owner),
        path_(std::move(path)),
        writable_(writable),
        memh_(std::move(memh)),
        rkey_(std::move(rkey)) {}

  const FileService* owner() const { return owner_; }
  const std::string& path() const { return path_; }
  uint64_t length() const { return memh_->length(); }
  bool writable() const { return writable_; }
  const uct::Rkey& rkey() const { return *rkey_; }

 private:
  const FileService* owner_;
  std::string path_;
  bool writable_;
  std::unique_ptr<uct::MemHandle> memh_;
  std::unique_ptr<uct::Rkey> rkey_;
};

inline const FileImpl& impl(const File& f) {
  return static_cast<const FileImpl&>(f);
}

class FileService {
 public:
  /// Opens the nvmeof transport of this process. Unsupported when it is not
  /// loaded; each failure is logged with why.
  static Result<std::unique_ptr<FileService>> open();
  /// Drains, then closes the transport.
  ~FileService() { drain(); }

  /// Progresses the transport until no file operation is posted (at most
  /// 30 s, then says how many are left).
  void drain();
  /// Registers `path`: read-write when `writable`, else read-only.
  Result<std::unique_ptr<File>> open_file(const std::string& path, bool writable);
  /// Memory the transport reads and writes itself (host; GPU with cuFile).
  uct::MemTypeMask direct_mem_types() const { return direct_; }
  /// Checks `io`'s runs (files opened here, inside them, writable for a
  /// write, no run empty; `staged`: each run's buffer follows the previous
  /// one's) and sums their bytes into `*total`; InvalidParam with why
  /// otherwise.
  Status check(const FileIo& io, bool staged, size_t* total, std::string* why) const;
  /// The direct protocol: `io`'s runs (`total` bytes) as pieces on the transport.
  std::unique_ptr<proto::RequestOp> direct_op(const FileIo& io, size_t total);
  /// The network stage of the staged protocol: the pieces of [offset,
  /// +length) of `io`'s runs laid end to end, from or to `bounce`.
  proto::StagingNetwork staged_network(const FileIo& io);
  unsigned progress() { return iface_->progress(); }

 private:
  FileService() = default;
  /// The pieces of [offset, +length) of `runs` laid end to end, cut at the
  /// transport's largest request; local memory from `local` on, or (null)
  /// each run's own buffer.
  std::vector<proto::FilePiece> pieces(std::span<const FileRun> runs, uint64_t offset,
                                       size_t length, uint8_t* local) const;

  std::unique_ptr<uct::MemoryDomain> md_;
  std::unique_ptr<uct::Iface> iface_;
  std::unique_ptr<uct::Endpoint> ep_;
  uct::MemTypeMask direct_ = 0;
  size_t max_piece_ = 0;  ///< the transport's largest put or get
  size_t posted_ = 0;     ///< pieces posted and not completed, of every FileOp
};

}  // namespace mc::ucp
