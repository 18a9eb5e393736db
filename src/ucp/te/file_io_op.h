// SPDX-License-Identifier: Apache-2.0
// FileIoOp: the file stage of a staged file-segment task (GPU memory moved
// through host bounce buffers): one bounce buffer written to or read from
// the segment's files with this process's nvmeof endpoint.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "ucp/proto/request_op.h"
#include "uct/api/ep.h"

namespace mc {
struct FileBuffer;
struct RemoteSegment;
}  // namespace mc

namespace mc::te {

/// A run of one file: `length` bytes at `offset` in it, and the local memory
/// they come from or go to.
struct FilePiece {
  const FileBuffer* file = nullptr;
  uint64_t offset = 0;  ///< in the file
  size_t length = 0;
  uint8_t* local = nullptr;
};

/// Cuts [segment_offset, +length) of file segment `seg` at the boundaries of
/// its files and at the nvmeof transport's largest request (1 GiB); `local`
/// is the memory of the first byte, `first_file` a file at or before the
/// one holding segment_offset. The range lies in the segment (checked at
/// submit).
std::vector<FilePiece> file_pieces(const RemoteSegment& seg, size_t first_file,
                                   uint64_t segment_offset, size_t length, uint8_t* local);

/// Writes (`write`) or reads `pieces` with the nvmeof endpoint `ep`, all
/// posted at the first progress() (again at the next one after
/// NoResource). Its final status comes once every posted piece has
/// completed: Ok, or the first error (a posting error is logged here, an
/// I/O error by the transport with the file and the errno).
class FileIoOp : public ucp::proto::RequestOp {
 public:
  FileIoOp(uct::Endpoint* ep, bool write, std::vector<FilePiece> pieces);

  ucs::Status progress() override;
  void abort() override { aborted_ = true; }
  size_t in_flight() const override;
  void orphan() override { orphaned_ = true; }

 private:
  uct::Endpoint* ep_;
  bool write_;
  std::vector<FilePiece> pieces_;
  size_t next_ = 0;                      ///< the next piece to post
  uct::Completion comp_;                 ///< count: pieces posted and not completed
  ucs::Status error_ = ucs::Status::Ok;  ///< a posting error
  bool aborted_ = false;
  bool orphaned_ = false;
};

}  // namespace mc::te
