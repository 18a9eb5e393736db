// SPDX-License-Identifier: Apache-2.0
// UCT tests: the send path (post, window, flush), ping-pong, and the end of a
// run (done, data check, verdict).
#include <cstring>

#include "tools/perf/uct_perf_tests.h"
#include "ucs/datastruct/wire.h"
#include "ucs/log/log.h"

namespace mc::perf {

// From here on messages go from (and gets land in) the final buffer.
void UctTest::use_final() {
  src_ = dst_ = buf(Buf::Final);
  src_iov_ = dst_iov_ = &iov_[static_cast<int>(Buf::Final)];
  slot_off_ = 0;
}

// --footprint: message `iter` goes from and to slot iter % slots_ of the
// send buffer (a get: lands in the receive buffer) and of the peer's.
void UctTest::use_slot(uint64_t iter) {
  if (slots_ <= 1) return;
  slot_off_ = (iter % slots_) * len_;
  const Buf b = cmd_ == UctCmd::Get ? Buf::Recv : Buf::Send;
  const std::vector<uct::Iov>& base = iov_[static_cast<int>(b)];
  slot_iov_ = base;
  for (uct::Iov& v : slot_iov_) v.buffer = static_cast<uint8_t*>(v.buffer) + slot_off_;
  if (cmd_ == UctCmd::Get) {
    dst_ = buf(b) + slot_off_;
    dst_iov_ = &slot_iov_;
  } else {
    src_ = buf(b) + slot_off_;
    src_iov_ = &slot_iov_;
  }
}

size_t UctTest::pack_send(void* dest, void* arg) {
  auto* self = static_cast<UctTest*>(arg);
  std::memcpy(dest, self->src_, self->len_);
  return self->len_;
}

void UctTest::unpack_recv(void* arg, const void* data, size_t length) {
  std::memcpy(static_cast<UctTest*>(arg)->dst_, data, length);
}

Status UctTest::post_once() {
  switch (cmd_) {
    case UctCmd::Am:
      switch (layout_) {
        case Layout::Short: {
          uint64_t header;
          std::memcpy(&header, src_, sizeof(header));
          return ep_->am_short(kDataAm, header, src_ + sizeof(header), len_ - sizeof(header));
        }
        case Layout::Bcopy: return ep_->am_bcopy(kDataAm, pack_send, this).status();
        case Layout::Zcopy:
          return ep_->am_zcopy(kDataAm, nullptr, 0, src_iov_->data(), src_iov_->size(), &comp_);
      }
      break;
    case UctCmd::Put:
      switch (layout_) {
        case Layout::Short: return ep_->put_short(src_, len_, remote_addr_ + slot_off_, *rkey_);
        case Layout::Bcopy:
          return ep_->put_bcopy(pack_send, this, remote_addr_ + slot_off_, *rkey_).status();
        case Layout::Zcopy:
          return ep_->put_zcopy(src_iov_->data(), src_iov_->size(), remote_addr_ + slot_off_,
                                *rkey_, &comp_);
      }
      break;
    case UctCmd::Get:
      if (layout_ == Layout::Bcopy) {
        return ep_->get_bcopy(unpack_recv, this, len_, remote_addr_ + slot_off_, *rkey_, &comp_);
      }
      return ep_->get_zcopy(dst_iov_->data(), dst_iov_->size(), remote_addr_ + slot_off_, *rkey_,
                            &comp_);
  }
  return Status::InvalidParam;
}

// Posts one message: NoResource means "progress, then retry".
Status UctTest::post() {
  for (;;) {
    const Status s = post_once();
    if (s == Status::Ok) return s;
    if (s == Status::InProgress) {
      ++comp_.count;  // completes in a later progress()
      return Status::Ok;
    }
    if (s != Status::NoResource) {
      why_ = protocol_name() + " failed: " + ucs::status_string(s);
      MC_LOG(error) << why_;
      return s;
    }
    events_ += iface_->progress();
    MC_RETURN_IF_ERROR(wd_.check(events_ + iter_));
  }
}

Status UctTest::wait_window(unsigned max_outstanding) {
  MC_RETURN_IF_ERROR(
      progress_until([&] { return comp_.count - 1 <= static_cast<int>(max_outstanding); }));
  if (is_error(comp_.status)) {
    why_ = protocol_name() + " completed with an error: " + ucs::status_string(comp_.status);
    MC_LOG(error) << why_;
    return comp_.status;
  }
  return Status::Ok;
}

Status UctTest::flush() {
  flushed_ = false;
  flush_comp_.count = 1;
  flush_comp_.status = Status::Ok;
  Status s = Status::NoResource;
  MC_RETURN_IF_ERROR(
      progress_until([&] { return (s = ep_->flush(&flush_comp_)) != Status::NoResource; }));
  if (s == Status::InProgress) {
    MC_RETURN_IF_ERROR(progress_until([&] { return flushed_; }));
    s = flush_comp_.status;
  }
  if (is_error(s)) {
    why_ = std::string("flush failed: ") + ucs::status_string(s);
    MC_LOG(error) << why_;
  }
  return s;
}

// Ping-pong: the client sends message i and waits for the answer i; the
// server waits for message i and answers it. put_lat carries i in the last
// byte, which the receiver polls; am_lat counts messages in the handler.
// The last message of each side comes from its final buffer.
Status UctTest::run_pingpong() {
  const uint8_t* last = buf(Buf::Recv) + len_ - 1;
  auto arrived = [&] {
    return cmd_ == UctCmd::Am ? am_recv_ > iter_
                              : *reinterpret_cast<const volatile uint8_t*>(last) == uint8_t(iter_);
  };
  for (iter_ = 0; iter_ < total_; ++iter_) {
    if (client_) {
      if (iter_ == p_.warmup) ctx_.measure->start();
      if (iter_ == total_ - 1) use_final();
      if (cmd_ == UctCmd::Put) src_[len_ - 1] = static_cast<uint8_t>(iter_);
      MC_RETURN_IF_ERROR(post());
      MC_RETURN_IF_ERROR(progress_until(arrived));
      if (iter_ >= p_.warmup) ctx_.measure->update(len_);
    } else {
      MC_RETURN_IF_ERROR(progress_until(arrived));
      if (iter_ == total_ - 1) use_final();
      if (cmd_ == UctCmd::Put) src_[len_ - 1] = static_cast<uint8_t>(iter_);
      MC_RETURN_IF_ERROR(post());
    }
  }
  return Status::Ok;
}

// What this side received, checked against the sender's pattern; "" when
// it holds or when this side received nothing to check.
std::string UctTest::check_own() const {
  const bool pingpong = test_.type == TestType::PingPong;
  const bool receiver = single_ || (cmd_ == UctCmd::Get ? client_ : pingpong || !client_);
  if (!receiver) return "";
  if (cmd_ == UctCmd::Am) {
    if (am_bad_length_) {
      return "an active message of " + std::to_string(am_bad_length_) + " bytes arrived, " +
             std::to_string(len_) + " expected";
    }
    if (am_recv_ != total_) {
      return std::to_string(am_recv_) + " active messages arrived, " + std::to_string(total_) +
             " expected";
    }
    if (am_final_ != 1) {
      return "the last active message arrived " + std::to_string(am_final_) + " times";
    }
    return am_check_;
  }
  // A get's last destination is the final buffer; a put's is the receive
  // buffer, which must hold the sender's final pattern (put_lat: but for the
  // last byte, the sequence number).
  const uint8_t* data = buf(cmd_ == UctCmd::Get ? Buf::Final : Buf::Recv);
  const uint64_t seed = cmd_ == UctCmd::Get ? peer_seed_ : peer_final_seed_;
  const size_t n = cmd_ == UctCmd::Put && pingpong ? len_ - 1 : len_;
  const ptrdiff_t bad = pattern_check(data, n, seed);
  if (bad >= 0) {
    return "byte " + std::to_string(bad) + " of the last message differs from the sender's";
  }
  if (n < len_ && data[n] != static_cast<uint8_t>(total_ - 1)) {
    return "the last byte holds sequence number " + std::to_string(data[n]) + ", " +
           std::to_string(static_cast<uint8_t>(total_ - 1)) + " expected";
  }
  return "";
}

// The end: everything posted completes, the client says Done, the server
// checks what it received and sends its verdict, the client checks its own.
Status UctTest::finish() {
  Rte& rte = *ctx_.rte;
  MC_RETURN_IF_ERROR(wait_window(0));
  MC_RETURN_IF_ERROR(flush());
  if (!client_) {
    MC_RETURN_IF_ERROR(serve_until_done());
    const std::string own = check_own();
    std::vector<uint8_t> verdict;
    ucs::WireWriter w(&verdict);
    w.u8(own.empty() ? 1 : 0);
    w.str(own);
    MC_RETURN_IF_ERROR(rte.send(MsgType::Verdict, verdict));
    if (own.empty()) return Status::Ok;
    MC_LOG(error) << "data check failed: " << own;
    return Status::BadData;
  }
  if (test_.type == TestType::Stream) ctx_.measure->finish();
  std::string server = "";
  {
    MC_RETURN_IF_ERROR(rte.send(MsgType::Done));
    MC_ASSIGN_OR_RETURN(const std::vector<uint8_t> wire, rte.recv(MsgType::Verdict, ctx_.timeout));
    ucs::WireReader r(wire);
    const bool ok = r.u8() != 0;
    server = r.str();
    if (!r.at_end()) return Status::BadData;
    if (!ok && server.empty()) server = "failed";
  }
  const std::string own = check_own();
  const bool pingpong = test_.type == TestType::PingPong;
  const char* who = single_               ? "this side"
                    : cmd_ == UctCmd::Get ? "the client"
                    : pingpong            ? "the client and the server"
                                          : "the server";
  if (own.empty() && server.empty()) {
    ctx_.info->check = std::string("passed (the last message, checked by ") + who +
                       ", matches the sender's pattern)";
    return Status::Ok;
  }
  ctx_.info->check = "FAILED:" + (own.empty() ? "" : " client: " + own) +
                     (server.empty() ? "" : " server: " + server);
  MC_LOG(error) << "data check " << ctx_.info->check;
  return Status::BadData;
}

}  // namespace mc::perf
