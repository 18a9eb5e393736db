// SPDX-License-Identifier: Apache-2.0
// FileOp: a read or write of files through the worker's file transport
// (nvmeof): pieces of files, each from or to local memory, posted as
// zcopy gets and puts on the transport's endpoint. The direct protocol of
// Worker::file_io, and the network stage of its staged protocol (a bounce
// buffer's pieces).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "ucp/proto/request_op.h"
#include "uct/api/ep.h"
#include "uct/api/md.h"

namespace mc::ucp::proto {

/// `length` bytes at `offset` in one file (its key on the file transport,
/// and its path for messages), and the local memory at `local`.
struct FilePiece {
  const uct::Rkey* rkey = nullptr;
  const std::string* path = nullptr;
  uint64_t offset = 0;
  uint8_t* local = nullptr;
  size_t length = 0;
};

/// Writes (`write`) or reads `pieces` with the file transport's endpoint
/// `ep`, all posted at the first progress() (the rest again at the next
/// one after NoResource). Local memory of type `mem`: memory other than
/// host memory is named to the transport by a handle of its type (cuFile).
/// Its final status comes once every posted piece has completed: Ok, or
/// the first error (a posting error is logged here, an I/O error by the
/// transport with the file and the errno). `posted`, when given, counts
/// the pieces posted and not completed of every FileOp that shares it (the
/// worker waits for them before closing the transport).
class FileOp : public RequestOp {
 public:
  FileOp(uct::Endpoint* ep, bool write, std::vector<FilePiece> pieces, uct::MemType mem,
         size_t* posted);

  ucs::Status progress() override;
  void abort() override { aborted_ = true; }
  size_t in_flight() const override;
  void orphan() override { orphaned_ = true; }

 private:
  /// A posted piece completed: counts it out here and in `posted_`.
  static void on_done(uct::Completion* comp);

  uct::Endpoint* ep_;
  bool write_;
  std::vector<FilePiece> pieces_;
  std::vector<uct::Completion> comps_;  ///< one per piece; never resized
  uct::MemHandle mem_;                  ///< names the memory's type to the transport
  size_t* posted_;
  size_t next_ = 0;                      ///< the next piece to post
  size_t outstanding_ = 0;               ///< pieces posted and not completed
  ucs::Status error_ = ucs::Status::Ok;  ///< the first posting or I/O error
  bool aborted_ = false;
  bool orphaned_ = false;
};

}  // namespace mc::ucp::proto
