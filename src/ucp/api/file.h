// SPDX-License-Identifier: Apache-2.0
// Files through a worker: File, a file opened with the worker's file
// transport (nvmeof: io_uring, cuFile when in use), and FileIo, one read or
// write of runs of such files (Worker::file_open, Worker::file_io). The
// memory of a run may be host memory or GPU memory: the worker moves GPU
// memory directly when its file transport accesses it (cuFile), else
// through its pinned host bounce buffers with a memory-type transport
// (cuda_copy), the staging protocol of puts and gets.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "ucs/sys/visibility.h"
#include "uct/api/types.h"

namespace mc::ucp {

class MemHandle;

/// A file registered with a worker's file transport (Worker::file_open).
/// Closed when destroyed; it must not outlive its worker, nor a request of
/// Worker::file_io that names it.
class MC_API File {
 public:
  virtual ~File();
  File(const File&) = delete;
  File& operator=(const File&) = delete;

  /// The path it was opened at.
  const std::string& path() const;
  /// Its size in bytes when it was opened (a block device's capacity).
  uint64_t length() const;
  /// Opened for writing (else file_io writes to it are refused).
  bool writable() const;

 protected:
  File() = default;  ///< only the worker's file service derives
};

/// `length` bytes at `offset` in `file`, and the memory they come from (a
/// write) or go to (a read).
struct FileRun {
  const File* file = nullptr;
  uint64_t offset = 0;
  void* buffer = nullptr;
  size_t length = 0;
};

/// How a worker moves memory of one type to and from files
/// (Worker::file_route).
enum class FileRoute : uint8_t {
  Direct,  ///< the file transport reads and writes it itself
  Staged,  ///< through host bounce buffers, copied by a memory-type transport
};

/// One read or write of Worker::file_io.
struct FileIo {
  bool write = false;  ///< memory -> files; else files -> memory
  /// Each inside its file (checked: InvalidParam otherwise). A staged
  /// request takes its runs' buffers as one range: each run's buffer
  /// follows the previous one's end.
  std::vector<FileRun> runs;
  /// The type of the runs' memory, all of one type (Worker::detect_mem_type
  /// names it for memory the application did not register).
  uct::MemType mem_type = uct::MemType::Host;
  /// The buffers' registration, if any: the staging copies use it instead
  /// of registering the buffers themselves.
  const MemHandle* memh = nullptr;
};

}  // namespace mc::ucp
