// SPDX-License-Identifier: Apache-2.0
// StagingOp: the fragments of a staged put or get, each one a small state
// machine over one bounce buffer.
#include "ucp/proto/staging_op.h"

#include <algorithm>

#include "ucs/log/log.h"

namespace mc::ucp::proto {

using ucs::Status;

StagingOp::StagingOp(StagingParams params) : p_(std::move(params)) {
  stages_.resize(std::max<size_t>(p_.depth, 1));
  for (Stage& st : stages_) st.owner = this;
}

StagingOp::~StagingOp() {
  // The worker keeps an op until nothing of it is in flight (or its
  // transports are gone): every bounce buffer is idle now.
  for (Stage& st : stages_) {
    st.net.reset();
    if (st.bounce) p_.pool->put(st.bounce);
  }
  for (auto& [op, bounce] : draining_) p_.pool->put(bounce);
}

Status StagingOp::setup() {
  const uct::MemHandle* mh = p_.user_memh;
  if (!mh || !mh->contains(p_.buffer, p_.length)) {
    MC_ASSIGN_OR_RETURN(own_memh_, p_.copy_md->mem_reg(p_.buffer, p_.length, uct::kAccessAll));
    mh = own_memh_.get();
  }
  std::vector<uint8_t> packed;
  MC_RETURN_IF_ERROR(p_.copy_md->mkey_pack(*mh, &packed));
  MC_ASSIGN_OR_RETURN(user_rkey_, p_.copy_md->rkey_unpack(packed));
  return Status::Ok;
}

void StagingOp::on_copy(uct::Completion* comp) {
  Stage& st = *static_cast<Stage*>(comp->arg);
  StagingOp* self = st.owner;
  if (is_error(comp->status)) {
    self->fail(comp->status);
    self->release(st);  // the copy is over
    return;
  }
  if (self->p_.op == Op::Put) {
    st.state = State::NetWait;  // the worker's progress of the request sends it
  } else {
    self->finish(st);
  }
}

void StagingOp::fail(Status s) {
  if (error_ == Status::Ok) {
    MC_LOG(error) << "ucp: staged " << op_name(p_.op) << " of " << p_.length
                  << " bytes failed: " << ucs::status_string(s);
    error_ = s;
  }
}

void StagingOp::finish(Stage& st) {
  done_bytes_ += st.length;
  release(st);
}

void StagingOp::release(Stage& st) {
  if (st.net && st.net->in_flight() > 0) {
    // Done, but a slice re-issued elsewhere is still out on a failed lane:
    // the buffer waits for it while the stage takes the next fragment.
    draining_.emplace_back(std::move(st.net), st.bounce);
  } else if (st.bounce) {
    p_.pool->put(st.bounce);
  }
  st.net.reset();
  st.bounce = nullptr;
  st.state = State::Free;
}

Status StagingOp::post_copy(Stage& st) {
  uct::Iov iov{st.bounce, st.length, p_.pool->memh().uct_memh(p_.copy_md_index)};
  const uint64_t addr = reinterpret_cast<uintptr_t>(p_.buffer) + st.offset;
  st.comp = uct::Completion{on_copy, 1, Status::Ok, &st};
  // The user's buffer is the copy transport's "remote" side: a put reads it
  // into the bounce buffer (get_zcopy), a get writes it from there (put_zcopy).
  const Status s = p_.op == Op::Put ? p_.copy_ep->get_zcopy(&iov, 1, addr, *user_rkey_, &st.comp)
                                    : p_.copy_ep->put_zcopy(&iov, 1, addr, *user_rkey_, &st.comp);
  if (s == Status::InProgress) {
    st.state = State::Copying;
  } else if (s == Status::Ok) {
    if (p_.op == Op::Put) {
      st.state = State::NetWait;
    } else {
      finish(st);
    }
  }
  return s;
}

// Moves one fragment as far as it goes now. An error leaves the stage as it
// is (its buffer held until what it posted completes).
Status StagingOp::advance(Stage& st) {
  for (;;) {
    switch (st.state) {
      case State::Free:
      case State::Copying: return Status::Ok;
      case State::CopyWait: {
        const Status s = post_copy(st);
        if (s == Status::NoResource) return Status::Ok;  // retried at the next progress
        if (is_error(s)) return s;
        break;
      }
      case State::NetWait: {
        ucs::Result<std::unique_ptr<RequestOp>> net =
            p_.network(st.bounce, st.length, p_.remote_addr + st.offset);
        if (!net.ok()) return net.status();
        st.net = std::move(*net);
        st.state = State::Net;
        break;
      }
      case State::Net: {
        const Status s = st.net->progress();
        if (s == Status::InProgress) return Status::Ok;
        if (is_error(s)) return s;
        // A get keeps its network op until the fragment is released: a
        // slice re-issued elsewhere may still be out on a failed lane.
        if (p_.op == Op::Put) {
          finish(st);
          return Status::Ok;
        }
        st.state = State::CopyWait;
        break;
      }
    }
  }
}

Status StagingOp::progress() {
  if (orphaned_) return is_error(error_) ? error_ : Status::Canceled;
  if (p_.length == 0) return Status::Ok;
  if (!set_up_) {
    set_up_ = true;
    const Status s = setup();
    if (is_error(s)) fail(s);
  }
  draining_.erase(std::remove_if(draining_.begin(), draining_.end(),
                                 [this](std::pair<std::unique_ptr<RequestOp>, void*>& d) {
                                   if (d.first->in_flight() > 0) return false;
                                   p_.pool->put(d.second);
                                   return true;
                                 }),
                  draining_.end());
  if (error_ == Status::Ok && !aborted_) {
    size_t active = 0;
    for (Stage& st : stages_) {
      if (st.state == State::Free && next_offset_ < p_.length) {
        st.bounce = p_.pool->get();
        if (st.bounce) {
          st.offset = next_offset_;
          st.length = std::min(p_.frag_size, p_.length - next_offset_);
          next_offset_ += st.length;
          st.state = p_.op == Op::Put ? State::CopyWait : State::NetWait;
        }
      }
      const Status s = advance(st);
      if (is_error(s)) {
        fail(s);
        break;
      }
      if (st.state != State::Free) ++active;
    }
    max_active_ = std::max(max_active_, active);
  }
  if (is_error(error_)) return error_;
  if (aborted_) return Status::Canceled;
  return done_bytes_ == p_.length ? Status::Ok : Status::InProgress;
}

void StagingOp::abort() {
  aborted_ = true;
  for (Stage& st : stages_) {
    if (st.net) st.net->abort();
  }
}

size_t StagingOp::in_flight() const {
  // The copy transport is the worker's, not the endpoint's: its copies
  // still complete (into this op's buffers) after the endpoint went.
  size_t n = 0;
  for (const Stage& st : stages_) {
    if (st.state == State::Copying) ++n;
    if (st.net && !orphaned_) n += st.net->in_flight();
  }
  if (!orphaned_) {
    for (const auto& d : draining_) n += d.first->in_flight();
  }
  return n;
}

void StagingOp::orphan() {
  orphaned_ = true;
  for (Stage& st : stages_) {
    if (st.net) st.net->orphan();
  }
  for (auto& d : draining_) d.first->orphan();
}

}  // namespace mc::ucp::proto
