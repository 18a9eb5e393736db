// SPDX-License-Identifier: Apache-2.0
// UCP tests: posting requests, the window, flush, ping-pong, the client's
// stream, the server's service loop, and the end of a run (done, data check,
// verdict).
#include <algorithm>
#include <cstring>

#include "tools/perf/perf_verdict.h"
#include "tools/perf/ucp_perf_tests.h"
#include "ucs/datastruct/wire.h"
#include "ucs/log/log.h"

namespace mc::perf {

namespace {

constexpr uint64_t kDonePollEvery = 1024;  // progress() calls between control polls

const char* cmd_name(UcpCmd cmd) {
  return cmd == UcpCmd::Put ? "put_nbx" : cmd == UcpCmd::Get ? "get_nbx" : "am_send_nbx";
}

}  // namespace

// From here on messages go from (and gets land in) the final buffer.
void UcpTest::use_final() {
  src_ = dst_ = buf(Buf::Final);
  src_params_.memh = dst_params_.memh = memh(Buf::Final);
  slot_off_ = 0;
}

// --footprint: message `iter` goes from and to slot iter % slots_ of the
// send buffer (a get: lands in the receive buffer) and of the peer's; the
// last message stays on the final buffer and offset 0.
void UcpTest::use_slot(uint64_t iter) {
  if (slots_ <= 1 || iter + 1 == total_) return;
  slot_off_ = (iter % slots_) * len_;
  if (cmd_ == UcpCmd::Get) {
    dst_ = buf(Buf::Recv) + slot_off_;
  } else {
    src_ = buf(Buf::Send) + slot_off_;
  }
}

// Posts one request; its callback counts it done. An error returned here
// means no request was made (and no callback will run).
Status UcpTest::post() {
  ++outstanding_;
  // Each call's result is read where it is made: assigning it to one
  // Result across the branches costs a variant move per message.
  Status s = Status::InvalidParam;
  switch (cmd_) {
    case UcpCmd::Put:
      s = ep_->put_nbx(src_, len_, remote_addr_ + slot_off_, *rkey_, src_params_).status();
      break;
    case UcpCmd::Get:
      s = ep_->get_nbx(dst_, len_, remote_addr_ + slot_off_, *rkey_, dst_params_).status();
      break;
    case UcpCmd::Am: s = ep_->am_send_nbx(kUcpDataAm, src_, len_, src_params_).status(); break;
  }
  if (s == Status::Ok) return Status::Ok;
  --outstanding_;
  why_ = std::string(cmd_name(cmd_)) + " failed: " + ucs::status_string(s);
  MC_LOG(error) << why_;
  return s;
}

Status UcpTest::request_error() {
  if (request_status_ == Status::Ok) return Status::Ok;
  if (why_.empty()) {
    why_ = std::string(cmd_name(cmd_)) +
           " completed with an error: " + ucs::status_string(request_status_);
    MC_LOG(error) << why_;
  }
  return request_status_;
}

Status UcpTest::wait_outstanding(unsigned max_outstanding) {
  return progress_until([&] { return outstanding_ <= max_outstanding; });
}

Status UcpTest::flush() {
  MC_ASSIGN_OR_RETURN(const std::shared_ptr<ucp::Request> req, ep_->flush());
  MC_RETURN_IF_ERROR(progress_until([&] { return req->completed(); }));
  if (is_error(req->status())) {
    why_ = std::string("flush failed: ") + ucs::status_string(req->status());
    MC_LOG(error) << why_;
  }
  return req->status();
}

// ucp_am_bw: the server says every message arrived.
Status UcpTest::send_ack() {
  const uint64_t count = am_.received;
  MC_ASSIGN_OR_RETURN(const std::shared_ptr<ucp::Request> req,
                      ep_->am_send_nbx(kUcpAckAm, &count, sizeof(count)));
  MC_RETURN_IF_ERROR(progress_until([&] { return req->completed(); }));
  return req->status();
}

// Ping-pong: the client sends message i and waits for the answer i; the
// server waits for message i and answers it. ucp_put_lat carries i in the
// last byte, which the receiver polls; ucp_am_lat counts messages in the
// handler. The last message of each side comes from its final buffer.
Status UcpTest::run_pingpong() {
  const uint8_t* last = buf(Buf::Recv) + len_ - 1;
  auto arrived = [&] {
    return cmd_ == UcpCmd::Am ? am_.received > iter_
                              : *reinterpret_cast<const volatile uint8_t*>(last) == uint8_t(iter_);
  };
  auto send = [&]() -> Status {
    // The send buffer is reused: the previous request must be done with it.
    if (outstanding_ > 0) MC_RETURN_IF_ERROR(wait_outstanding(0));
    if (iter_ == total_ - 1) use_final();
    if (cmd_ == UcpCmd::Put) src_[len_ - 1] = static_cast<uint8_t>(iter_);
    return post();
  };
  for (iter_ = 0; iter_ < total_; ++iter_) {
    if (client_) {
      if (iter_ == p_.warmup) ctx_.measure->start();
      MC_RETURN_IF_ERROR(send());
      MC_RETURN_IF_ERROR(progress_until(arrived));
      if (iter_ >= p_.warmup) ctx_.measure->update(len_);
    } else {
      MC_RETURN_IF_ERROR(progress_until(arrived));
      MC_RETURN_IF_ERROR(send());
    }
  }
  return Status::Ok;
}

// Posts iterations [iter_, end) with at most -O requests in flight, each
// counted by `measure` unless null (the warm-up).
Status UcpTest::post_until(uint64_t end, Measurement* measure) {
  for (; iter_ < end; ++iter_) {
    if (outstanding_ >= window_) MC_RETURN_IF_ERROR(wait_outstanding(window_ - 1));
    use_slot(iter_);
    MC_RETURN_IF_ERROR(post());
    if (measure) measure->update(len_);
  }
  return Status::Ok;
}

// The client streams with at most -O requests in flight: the warm-up, the
// measured iterations but the last, then the last from the final buffer
// (the phases are loops of their own, not tests in every iteration). Puts
// may land out of order (several lanes or connections): all before the
// last are flushed first, so that its final pattern stays. ucp_am_bw waits
// for the server's acknowledgement of the last message before the clock
// stops.
Status UcpTest::run_stream_client() {
  iter_ = 0;
  if (total_ == 0) return Status::Ok;
  const uint64_t last = total_ - 1;
  MC_RETURN_IF_ERROR(post_until(std::min(p_.warmup, last), nullptr));
  if (iter_ == p_.warmup) ctx_.measure->start();
  MC_RETURN_IF_ERROR(post_until(last, iter_ >= p_.warmup ? ctx_.measure : nullptr));
  if (cmd_ == UcpCmd::Put) {
    MC_RETURN_IF_ERROR(wait_outstanding(0));
    MC_RETURN_IF_ERROR(flush());
  }
  use_final();
  MC_RETURN_IF_ERROR(post_until(total_, iter_ >= p_.warmup ? ctx_.measure : nullptr));
  if (cmd_ == UcpCmd::Am) MC_RETURN_IF_ERROR(progress_until([&] { return am_acked_; }));
  return Status::Ok;
}

// The server progresses (to receive, and to serve one-sided operations)
// until the client says it is done; ucp_am_bw acknowledges the last message
// meanwhile. One-sided operations give the server no events, so only the
// peer's liveness bounds this wait.
Status UcpTest::serve_until_done() {
  const bool ack = cmd_ == UcpCmd::Am && test_.type == TestType::Stream;
  bool acked = false;
  for (uint64_t n = 1;; ++n) {
    events_ += worker_->progress();
    if (ack && !acked && am_.received >= total_) {
      MC_RETURN_IF_ERROR(send_ack());
      acked = true;
    }
    if (n % kDonePollEvery == 0) {
      MC_ASSIGN_OR_RETURN(const bool waiting, ctx_.rte->poll());
      if (waiting) break;
    }
    MC_RETURN_IF_ERROR(wd_.check_peer());
  }
  return ctx_.rte->recv(MsgType::Done, ctx_.timeout).status();
}

// What this side received, checked against the sender's pattern; "" when
// it holds or when this side received nothing to check. A get's last
// destination is the final buffer; a put's is the receive buffer, with the
// sender's final pattern (ucp_put_lat: but for the last byte, the sequence
// number).
std::string UcpTest::check_own() const {
  const bool pingpong = test_.type == TestType::PingPong;
  const bool get = cmd_ == UcpCmd::Get;
  if (!(get ? client_ : pingpong || !client_)) return "";
  return check_receipt({.am = cmd_ == UcpCmd::Am ? &am_ : nullptr,
                        .expected = total_,
                        .data = buf(get ? Buf::Final : Buf::Recv),
                        .length = len_,
                        .seed = get ? peer_seed_ : peer_final_seed_,
                        .sequenced = cmd_ == UcpCmd::Put && pingpong});
}

// The end: everything posted completes and is flushed, then the verdicts.
Status UcpTest::finish() {
  MC_RETURN_IF_ERROR(wait_outstanding(0));
  MC_RETURN_IF_ERROR(flush());
  const char* who = cmd_ == UcpCmd::Get                ? "the client"
                    : test_.type == TestType::PingPong ? "the client and the server"
                                                       : "the server";
  return exchange_verdict(
      ctx_, client_, test_.type == TestType::Stream, [this] { return serve_until_done(); },
      [this] { return check_own(); }, who);
}

}  // namespace mc::perf
