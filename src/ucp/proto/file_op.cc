// SPDX-License-Identifier: Apache-2.0
// FileOp (see file_op.h).
#include "ucp/proto/file_op.h"

#include <utility>

#include "ucs/log/log.h"

namespace mc::ucp::proto {

using ucs::Status;

FileOp::FileOp(uct::Endpoint* ep, bool write, std::vector<FilePiece> pieces, uct::MemType mem,
               size_t* posted)
    : ep_(ep),
      write_(write),
      pieces_(std::move(pieces)),
      comps_(pieces_.size()),
      mem_(nullptr, 0, uct::kAccessLocal, mem),
      posted_(posted) {
  for (uct::Completion& c : comps_) {
    c.func = &FileOp::on_done;
    c.arg = this;
  }
}

void FileOp::on_done(uct::Completion* comp) {
  auto* op = static_cast<FileOp*>(comp->arg);
  --op->outstanding_;
  if (op->posted_) --*op->posted_;
  if (is_error(comp->status) && op->error_ == Status::Ok) op->error_ = comp->status;
}

Status FileOp::progress() {
  if (orphaned_) return is_error(error_) ? error_ : Status::Canceled;
  const uct::MemHandle* memh = mem_.mem_type() != uct::MemType::Host ? &mem_ : nullptr;
  while (!aborted_ && error_ == Status::Ok && next_ < pieces_.size()) {
    const FilePiece& p = pieces_[next_];
    uct::Completion* comp = &comps_[next_];
    comp->count = 1;
    comp->status = Status::Ok;
    uct::Iov iov{p.local, p.length, memh};
    const Status s = write_ ? ep_->put_zcopy(&iov, 1, p.offset, *p.rkey, comp)
                            : ep_->get_zcopy(&iov, 1, p.offset, *p.rkey, comp);
    if (s == Status::InProgress) {
      ++outstanding_;
      if (posted_) ++*posted_;
      ++next_;
      continue;
    }
    if (s == Status::NoResource) break;  // posted again at the next progress
    if (s != Status::Ok) {
      MC_LOG(error) << "ucp: file " << (write_ ? "write to" : "read from") << " '" << *p.path
                    << "' (" << p.length << " bytes at " << p.offset << ") not started: " << s;
      error_ = s;
      break;
    }
    ++next_;
  }
  if (outstanding_ > 0) return Status::InProgress;
  if (is_error(error_)) return error_;
  if (aborted_) return Status::Canceled;
  return next_ == pieces_.size() ? Status::Ok : Status::InProgress;
}

size_t FileOp::in_flight() const {
  return orphaned_ ? 0 : outstanding_;
}

}  // namespace mc::ucp::proto
