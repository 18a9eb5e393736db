// SPDX-License-Identifier: Apache-2.0
// FileIoOp (see file_io_op.h), and the cutting of a segment
// range into file pieces shared with the direct (host memory) path.
#include "ucp/te/file_io_op.h"

#include <algorithm>

#include "ucp/te/engine.h"
#include "ucs/log/log.h"

namespace mc::te {

using ucs::Status;

std::vector<FilePiece> file_pieces(const RemoteSegment& seg, size_t first_file,
                                   uint64_t segment_offset, size_t length, uint8_t* local) {
  constexpr uint64_t kMaxPiece = uint64_t{1} << 30;  // the nvmeof transport's largest request
  std::vector<FilePiece> pieces;
  uint64_t pos = segment_offset;
  const uint64_t end = pos + length;
  for (size_t i = first_file; i < seg.files.size() && pos < end; ++i) {
    const FileBuffer& f = seg.files[i];
    while (pos < end && pos < f.offset + f.length) {
      if (pos < f.offset) break;  // not expected: first_file is past the range
      const auto n =
          static_cast<size_t>(std::min({end, f.offset + f.length, pos + kMaxPiece}) - pos);
      pieces.push_back({&f, pos - f.offset, n, local + (pos - segment_offset)});
      pos += n;
    }
  }
  return pieces;
}

FileIoOp::FileIoOp(uct::Endpoint* ep, bool write, std::vector<FilePiece> pieces)
    : ep_(ep), write_(write), pieces_(std::move(pieces)) {
  comp_.count = 0;  // no callback: progress() and in_flight() read the count
}

Status FileIoOp::progress() {
  if (orphaned_) return is_error(error_) ? error_ : Status::Canceled;
  while (!aborted_ && error_ == Status::Ok && next_ < pieces_.size()) {
    const FilePiece& p = pieces_[next_];
    uct::Iov iov{p.local, p.length, nullptr};
    ++comp_.count;
    const Status s = write_ ? ep_->put_zcopy(&iov, 1, p.offset, *p.file->rkey, &comp_)
                            : ep_->get_zcopy(&iov, 1, p.offset, *p.file->rkey, &comp_);
    if (s == Status::InProgress) {
      ++next_;
      continue;
    }
    --comp_.count;                       // not posted, or done at once
    if (s == Status::NoResource) break;  // posted again at the next progress
    if (s != Status::Ok) {
      MC_LOG(error) << "transfer engine: staged " << (write_ ? "write to" : "read from") << " '"
                    << p.file->path << "' (" << p.length << " bytes at " << p.offset
                    << ") not started: " << s;
      error_ = s;
      break;
    }
    ++next_;
  }
  if (comp_.count > 0) return Status::InProgress;
  if (is_error(error_)) return error_;
  if (is_error(comp_.status)) return comp_.status;
  if (aborted_) return Status::Canceled;
  return next_ == pieces_.size() ? Status::Ok : Status::InProgress;
}

size_t FileIoOp::in_flight() const {
  return orphaned_ ? 0 : static_cast<size_t>(std::max(comp_.count, 0));
}

}  // namespace mc::te
