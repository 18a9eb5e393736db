// SPDX-License-Identifier: Apache-2.0
// One open file or block device of the nvmeof transport: a buffered and, where
// the file system allows it, an O_DIRECT descriptor, its size and alignment.
#pragma once

#include <sys/uio.h>

#include <cstdint>
#include <memory>
#include <string>

#include "ucs/status/status.h"
#include "uct/nvmeof/nvmeof_cufile.h"

namespace mc::uct::nvmeof {

using ucs::Result;
using ucs::Status;

class NvmeofFile {
 public:
  /// Opens `path` for reading, and for writing when `writable`; also with
  /// O_DIRECT when `direct` and the file system accepts it. NoElem when the
  /// path does not exist; IoError (logged with the errno text) when it cannot
  /// be opened or sized; InvalidParam for an empty file or something that is
  /// neither a regular file nor a block device.
  static Result<std::shared_ptr<NvmeofFile>> open(const std::string& path, bool writable,
                                                  bool direct);
  ~NvmeofFile();
  NvmeofFile(const NvmeofFile&) = delete;
  NvmeofFile& operator=(const NvmeofFile&) = delete;

  const std::string& path() const { return path_; }
  bool writable() const { return writable_; }
  bool block_device() const { return block_device_; }
  bool has_direct() const { return direct_fd_ >= 0; }
  /// Block size O_DIRECT needs offsets, lengths and addresses aligned to.
  size_t alignment() const { return alignment_; }
  /// Size at open time.
  uint64_t open_size() const { return open_size_; }

  /// The size now: a block device's does not change; a regular file's is
  /// read again (fstat), so a truncated file is noticed. IoError when fstat fails.
  Result<uint64_t> size() const;

  /// Whether an operation at `offset` on `iov` may use O_DIRECT.
  bool direct_ok(uint64_t offset, const struct iovec* iov, size_t count) const;

  /// The descriptor to use: the O_DIRECT one when `direct`.
  int fd(bool direct) const { return direct ? direct_fd_ : fd_; }

  /// The file's cuFile handle: registered (cuFileHandleRegister, the
  /// O_DIRECT descriptor when there is one) at the first call, kept until
  /// the file closes. Null with `*why` set when registration fails.
  cufile::Handle cufile_handle(const std::shared_ptr<const Cufile>& cufile, std::string* why);

 private:
  NvmeofFile() = default;

  std::string path_;
  bool writable_ = false;
  bool block_device_ = false;
  int fd_ = -1;
  int direct_fd_ = -1;
  size_t alignment_ = 4096;
  uint64_t open_size_ = 0;
  std::shared_ptr<const Cufile> cufile_;  // set with cufile_handle_
  cufile::Handle cufile_handle_ = nullptr;
};

}  // namespace mc::uct::nvmeof
