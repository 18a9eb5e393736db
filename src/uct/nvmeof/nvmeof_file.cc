// SPDX-License-Identifier: Apache-2.0
// Opening and sizing files and block devices.
#include "uct/nvmeof/nvmeof_file.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "ucs/log/log.h"
#include "ucs/sys/sys.h"

namespace mc::uct::nvmeof {

namespace {

// Regular files: 4 KiB satisfies O_DIRECT on every common file system
// (their logical block size is 512 or 4096).
constexpr size_t kFileAlignment = 4096;

}  // namespace

Result<std::shared_ptr<NvmeofFile>> NvmeofFile::open(const std::string& path, bool writable,
                                                     bool direct) {
  std::shared_ptr<NvmeofFile> f(new NvmeofFile());
  f->path_ = path;
  f->writable_ = writable;
  const int flags = (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC;
  f->fd_ = ::open(path.c_str(), flags);
  if (f->fd_ < 0) {
    const int err = errno;
    MC_LOG(error) << "nvmeof: cannot open " << path << " for " << (writable ? "writing" : "reading")
                  << ": " << ucs::errno_string(err);
    return err == ENOENT ? Status::NoElem : Status::IoError;
  }
  struct stat st {};
  if (fstat(f->fd_, &st) != 0) {
    MC_LOG(error) << "nvmeof: cannot stat " << path << ": " << ucs::errno_string(errno);
    return Status::IoError;
  }
  if (S_ISBLK(st.st_mode)) {
    f->block_device_ = true;
    int lbs = 0;
    if (ioctl(f->fd_, BLKGETSIZE64, &f->open_size_) != 0 || ioctl(f->fd_, BLKSSZGET, &lbs) != 0) {
      MC_LOG(error) << "nvmeof: cannot read the size of block device " << path << ": "
                    << ucs::errno_string(errno);
      return Status::IoError;
    }
    f->alignment_ = lbs > 0 ? static_cast<size_t>(lbs) : 512;
    // open(O_RDWR) succeeds on a read-only block device; its writes would fail.
    int ro = 0;
    if (writable && ioctl(f->fd_, BLKROGET, &ro) == 0 && ro) {
      MC_LOG(error) << "nvmeof: cannot open " << path
                    << " for writing: " << ucs::errno_string(EROFS) << " (read-only block device)";
      return Status::IoError;
    }
  } else if (S_ISREG(st.st_mode)) {
    f->open_size_ = static_cast<uint64_t>(st.st_size);
    f->alignment_ = kFileAlignment;
  } else {
    MC_LOG(error) << "nvmeof: " << path << " is neither a regular file nor a block device";
    return Status::InvalidParam;
  }
  if (f->open_size_ == 0) {
    MC_LOG(error) << "nvmeof: " << path << " is empty: a segment file needs its length";
    return Status::InvalidParam;
  }
  if (direct) {
    f->direct_fd_ = ::open(path.c_str(), flags | O_DIRECT);
    if (f->direct_fd_ < 0) {
      MC_LOG(debug) << "nvmeof: " << path << " cannot be opened with O_DIRECT ("
                    << ucs::errno_string(errno) << "): every operation uses the page cache";
    }
  }
  return f;
}

NvmeofFile::~NvmeofFile() {
  if (cufile_handle_) cufile_->handle_deregister(cufile_handle_);
  if (direct_fd_ >= 0) ::close(direct_fd_);
  if (fd_ >= 0) ::close(fd_);
}

cufile::Handle NvmeofFile::cufile_handle(const std::shared_ptr<const Cufile>& cufile,
                                         std::string* why) {
  if (cufile_handle_) return cufile_handle_;
  // cuFile moves data directly only on an O_DIRECT descriptor; on a
  // buffered one it uses its compatibility mode.
  cufile_handle_ = cufile->handle_register(has_direct() ? direct_fd_ : fd_, why);
  if (cufile_handle_) cufile_ = cufile;
  return cufile_handle_;
}

Result<uint64_t> NvmeofFile::size() const {
  if (block_device_) return open_size_;
  struct stat st {};
  if (fstat(fd_, &st) != 0) {
    MC_LOG(error) << "nvmeof: cannot stat " << path_ << ": " << ucs::errno_string(errno);
    return Status::IoError;
  }
  return static_cast<uint64_t>(st.st_size);
}

bool NvmeofFile::direct_ok(uint64_t offset, const struct iovec* iov, size_t count) const {
  if (direct_fd_ < 0 || offset % alignment_ != 0) return false;
  for (size_t i = 0; i < count; ++i) {
    if (reinterpret_cast<uintptr_t>(iov[i].iov_base) % alignment_ != 0 ||
        iov[i].iov_len % alignment_ != 0) {
      return false;
    }
  }
  return true;
}

}  // namespace mc::uct::nvmeof
