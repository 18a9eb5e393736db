// SPDX-License-Identifier: Apache-2.0
// UCT tests: the send path (post, window, flush), ping-pong, and the end of a
// run (done, data check, verdict).
#include <cstring>

#include "tools/perf/perf_verdict.h"
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
    return cmd_ == UctCmd::Am ? am_.received > iter_
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
// it holds or when this side received nothing to check. A get's last
// destination is the final buffer; a put's is the receive buffer, with the
// sender's final pattern (put_lat: but for the last byte, the sequence
// number).
std::string UctTest::check_own() const {
  const bool pingpong = test_.type == TestType::PingPong;
  const bool get = cmd_ == UctCmd::Get;
  if (!(single_ || (get ? client_ : pingpong || !client_))) return "";
  return check_receipt({.am = cmd_ == UctCmd::Am ? &am_ : nullptr,
                        .expected = total_,
                        .data = buf(get ? Buf::Final : Buf::Recv),
                        .length = len_,
                        .seed = get ? peer_seed_ : peer_final_seed_,
                        .sequenced = cmd_ == UctCmd::Put && pingpong});
}

// The end: everything posted completes, then the verdicts.
Status UctTest::finish() {
  MC_RETURN_IF_ERROR(wait_window(0));
  MC_RETURN_IF_ERROR(flush());
  const char* who = single_                            ? "this side"
                    : cmd_ == UctCmd::Get              ? "the client"
                    : test_.type == TestType::PingPong ? "the client and the server"
                                                       : "the server";
  return exchange_verdict(
      ctx_, client_, test_.type == TestType::Stream, [this] { return serve_until_done(); },
      [this] { return check_own(); }, who);
}

}  // namespace mc::perf
