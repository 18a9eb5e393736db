// SPDX-License-Identifier: Apache-2.0
// UCT bandwidth tests (am_bw, put_bw, get): the client's stream with its
// window and active-message flow control, and the server's service loops.
#include <cstring>

#include "tools/perf/uct_perf_tests.h"
#include "ucs/log/log.h"

namespace mc::perf {

namespace {

constexpr unsigned kSendsPerProgress = 16;  // as ucx_perftest: progress every 16 sends
constexpr uint64_t kDonePollEvery = 1024;   // progress() calls between control polls

size_t pack_u64(void* dest, void* arg) {
  std::memcpy(dest, arg, sizeof(uint64_t));
  return sizeof(uint64_t);
}

}  // namespace

// The client streams: at most -O operations in flight and, for active
// messages, at most -W ahead of what the server acknowledged. The clock
// stops when the last message is acknowledged (am_bw) or flushed.
Status UctTest::run_stream_client() {
  const bool fc = cmd_ == UctCmd::Am && !single_;
  const unsigned fc_window = p_.fc_window;
  for (iter_ = 0; iter_ < total_; ++iter_) {
    if (iter_ == p_.warmup) ctx_.measure->start();
    if (fc && iter_ - am_acked_ >= fc_window) {
      MC_RETURN_IF_ERROR(progress_until([&] { return iter_ - am_acked_ < fc_window; }));
    }
    if (iter_ == total_ - 1) {
      // Puts may land out of order (several connections): all before the
      // last must be complete at the target for its final pattern to stay.
      if (cmd_ == UctCmd::Put) {
        MC_RETURN_IF_ERROR(wait_window(0));
        MC_RETURN_IF_ERROR(flush());
      }
      use_final();
    } else {
      use_slot(iter_);
    }
    if (comp_.count - 1 >= static_cast<int>(window_)) MC_RETURN_IF_ERROR(wait_window(window_ - 1));
    MC_RETURN_IF_ERROR(post());
    if (iter_ >= p_.warmup) ctx_.measure->update(len_);
    if (iter_ % kSendsPerProgress == 0) events_ += iface_->progress();
  }
  if (cmd_ == UctCmd::Am) {
    // Over one iface the handler counts our own messages; else the server's
    // last acknowledgement says all arrived.
    MC_RETURN_IF_ERROR(progress_until([&] { return (single_ ? am_.received : am_acked_) >= total_; }));
  }
  return Status::Ok;
}

// am_bw server: acknowledges every half window, and the last message.
Status UctTest::serve_acks() {
  const uint64_t step = std::max<uint64_t>(1, p_.fc_window / 2);
  uint64_t acked = 0;
  while (acked < total_) {
    events_ += iface_->progress();
    if (am_.received >= acked + step || (am_.received == total_ && acked < total_)) {
      acked = am_.received;
      MC_RETURN_IF_ERROR(send_ack(acked));
    }
    MC_RETURN_IF_ERROR(wd_.check(events_ + am_.received));
  }
  return Status::Ok;
}

Status UctTest::send_ack(uint64_t count) {
  const uct::IfaceAttr& a = side_->attr();
  const bool use_short = (a.cap & uct::kCapAmShort) && a.am.max_short >= sizeof(count);
  for (;;) {
    const Status s = use_short ? ep_->am_short(kAckAm, count, nullptr, 0)
                               : ep_->am_bcopy(kAckAm, pack_u64, &count).status();
    if (s == Status::Ok) return s;
    if (s != Status::NoResource) {
      why_ = std::string("sending an acknowledgement failed: ") + ucs::status_string(s);
      MC_LOG(error) << why_;
      return s;
    }
    events_ += iface_->progress();
    MC_RETURN_IF_ERROR(wd_.check(events_ + am_.received));
  }
}

// The server progresses (its transport may need it to receive, or to send
// what it answered) until the client says it is done. One-sided operations
// give the server no events, so only the peer's liveness bounds this wait.
Status UctTest::serve_until_done() {
  for (uint64_t n = 1;; ++n) {
    events_ += iface_->progress();
    if (n % kDonePollEvery == 0) {
      MC_ASSIGN_OR_RETURN(const bool waiting, ctx_.rte->poll());
      if (waiting) break;
    }
    MC_RETURN_IF_ERROR(wd_.check_peer());
  }
  return ctx_.rte->recv(MsgType::Done, ctx_.timeout).status();
}

}  // namespace mc::perf
