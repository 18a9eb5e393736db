// SPDX-License-Identifier: Apache-2.0
// TcpConn: sending queued frames with sendmsg, receiving frames through a
// buffer or straight into their destination.
#include "uct/tcp/tcp_conn.h"

#include <sys/epoll.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "ucs/log/log.h"
#include "ucs/sys/sys.h"
#include "uct/tcp/tcp_socket.h"

namespace mc::uct::tcp {

namespace {

constexpr size_t kRxBufSize = 64 * 1024;
// A payload at least this large, with nothing buffered, is received straight
// into its destination instead of through the buffer.
constexpr size_t kDirectRecvMin = 8 * 1024;
// Receive calls per callback: level-triggered epoll calls again, so one busy
// connection cannot starve the others of the loop.
constexpr int kRecvRounds = 16;
constexpr size_t kMaxSendIov = 64;
// Frames up to this size are gathered and sent with send().
constexpr size_t kSmallSend = 256;
// Reading also watches for the peer's close, which epoll reports while data
// is still queued: a put read after it is dropped (drop_stale_put_locked).
constexpr uint32_t kReadEvents = EPOLLIN | EPOLLRDHUP;

}  // namespace

void TxFrame::keep_rest() {
  size_t skip = sent > wire::kHeaderSize ? sent - wire::kHeaderSize : 0;
  std::vector<uint8_t> rest;
  for (uint32_t i = 0; i < data_count; ++i) {
    const auto* p = static_cast<const uint8_t*>(data[i].iov_base);
    if (skip >= data[i].iov_len) {
      skip -= data[i].iov_len;
      continue;
    }
    rest.insert(rest.end(), p + skip, p + data[i].iov_len);
    skip = 0;
  }
  owned = std::move(rest);
  // The header part still to send stays in hdr; the payload sent so far is
  // accounted as if it were the start of `owned`'s buffer.
  const size_t payload_sent = total - wire::kHeaderSize - owned.size();
  data_count = 0;
  if (payload_sent) {
    // Entries the sender skips over: never read again, so any non-null base
    // will do; the owned copy covers the rest.
    data[data_count++] = iovec{owned.data(), payload_sent};
  }
  if (!owned.empty()) data[data_count++] = iovec{owned.data(), owned.size()};
}

void RxSink::write(const uint8_t* src, size_t n) {
  const size_t start = done;
  done += n;
  if (discard || revoked) return;
  std::shared_lock<std::shared_mutex> use;
  if (region) {
    use = std::shared_lock(region->use);
    if (region->revoked) {
      revoked = true;
      return;
    }
  }
  size_t skip = start;
  for (uint32_t i = 0; i < seg_count && n > 0; ++i) {
    if (skip >= seg[i].iov_len) {
      skip -= seg[i].iov_len;
      continue;
    }
    const size_t k = std::min(n, seg[i].iov_len - skip);
    std::memcpy(static_cast<uint8_t*>(seg[i].iov_base) + skip, src, k);
    src += k;
    n -= k;
    skip = 0;
  }
}

ssize_t RxSink::readv_from(int fd) {
  std::shared_lock<std::shared_mutex> use;
  if (region) {
    use = std::shared_lock(region->use);
    if (region->revoked) {
      revoked = true;
      return 0;
    }
  }
  iovec vec[kMaxIov];
  int n = 0;
  size_t skip = done;
  for (uint32_t i = 0; i < seg_count; ++i) {
    if (skip >= seg[i].iov_len) {
      skip -= seg[i].iov_len;
      continue;
    }
    vec[n++] = iovec{static_cast<uint8_t*>(seg[i].iov_base) + skip, seg[i].iov_len - skip};
    skip = 0;
  }
  const ssize_t got = readv(fd, vec, n);
  if (got > 0) done += static_cast<size_t>(got);
  return got;
}

TcpConn::TcpConn(int fd, bool connecting, std::mutex* lock, TcpConnHandler* handler,
                 ucs::EventLoop* loop, wire::Limits limits, std::string name)
    : fd_(fd),
      lock_(lock ? lock : &own_lock_),
      handler_(handler),
      loop_(loop),
      limits_(limits),
      name_(std::move(name)),
      connecting_(connecting),
      rx_buf_(kRxBufSize) {}

TcpConn::~TcpConn() {
  if (fd_ >= 0) close(fd_);
}

Status TcpConn::attach(std::shared_ptr<TcpConn> keep) {
  std::lock_guard guard(*lock_);
  if (dead_) return Status::Ok;  // closed before it was watched: nothing to watch
  events_ = kReadEvents | (connecting_ ? EPOLLOUT : 0u);
  if (keep) {
    return loop_->add_fd(fd_, events_, [keep](int, uint32_t events) { keep->on_events(events); });
  }
  return loop_->add_fd(fd_, events_, [this](int, uint32_t events) { on_events(events); });
}

void TcpConn::detach() {
  (void)loop_->remove_fd(fd_);
}

void TcpConn::close_locked(bool abort) {
  if (dead_) return;
  dead_ = true;
  // On the loop thread this does not wait; elsewhere the owner detached first.
  (void)loop_->remove_fd(fd_);
  if (abort) {
    // Zero linger, then a disconnect (connect to AF_UNSPEC): the kernel
    // sends a reset and drops the send queue now rather than retransmitting
    // it once the link is back.
    const linger off{1, 0};
    setsockopt(fd_, SOL_SOCKET, SO_LINGER, &off, sizeof(off));
    sockaddr none{};
    none.sa_family = AF_UNSPEC;
    (void)::connect(fd_, &none, sizeof(none));
  }
  shutdown(fd_, SHUT_RDWR);
}

void TcpConn::fail_locked(Status status, const std::string& why, bool clean) {
  if (dead_) return;
  handler_->conn_failed(*this, status, why, clean);
  close_locked();
}

void TcpConn::pause_locked() {
  paused_ = true;
  update_events_locked();
}

void TcpConn::resume_locked() {
  if (!paused_) return;
  paused_ = false;
  // Frames may wait in rx_buf_ with nothing left in the socket to wake the
  // loop: watching EPOLLOUT (writable at once) makes it call on_events().
  kick_ = true;
  update_events_locked();
}

void TcpConn::on_events(uint32_t events) {
  std::lock_guard guard(*lock_);
  if (dead_) return;
  if (std::exchange(kick_, false)) events |= EPOLLIN;
  if (events & (EPOLLRDHUP | EPOLLERR | EPOLLHUP)) {
    hung_up_ = true;
    drop_stale_put_locked();
  }
  // A hang-up or error is read even when paused: it is reported level-
  // triggered, and the peer is gone anyway.
  if (paused_ && (events & (EPOLLERR | EPOLLHUP))) paused_ = false;
  if (connecting_) {
    if (!(events & (EPOLLOUT | EPOLLERR | EPOLLHUP))) return;
    finish_connect_locked();
    if (connecting_ || dead_) return;
  }
  if (broken_) {
    fail_locked(Status::ConnectionReset, "send failed: " + ucs::errno_string(broken_errno_), false);
    return;
  }
  if (events & (EPOLLIN | EPOLLERR | EPOLLHUP)) recv_locked();
  // Sending may drain the backlog that stopped reading: read again, and
  // again after that reading refilled it, a few times for fairness.
  for (int round = 0; !dead_; ++round) {
    if (!tx_.empty()) flush_locked();
    if (dead_ || !rx_stalled_ || backlogged()) break;
    rx_stalled_ = false;
    if (round == 4) {
      kick_ = true;  // frames may wait in rx_buf_: come back soon, not never
      break;
    }
    recv_locked();
  }
  update_events_locked();
}

void TcpConn::finish_connect_locked() {
  int err = 0;
  const Status s = connect_result(fd_, &err);
  if (is_error(s)) {
    fail_locked(s, "connect failed: " + ucs::errno_string(err), false);
    return;
  }
  connecting_ = false;
  handler_->connected(*this);
  if (dead_) return;
  update_events_locked();
  if (!tx_.empty()) flush_locked();
}

void TcpConn::update_events_locked() {
  if (dead_) return;
  const uint32_t want = (paused_ || rx_stalled_ ? 0u : kReadEvents) |
                        (connecting_ || broken_ || kick_ || !tx_.empty() ? EPOLLOUT : 0u);
  if (want == events_) return;
  if (loop_->modify_fd(fd_, want) == Status::Ok) events_ = want;
}

namespace {

// The part of `f` not sent yet as iovecs (at most 1 + f.data_count).
size_t unsent_iov(const TxFrame& f, iovec* vec) {
  size_t n = 0;
  size_t skip = f.sent;
  if (skip < wire::kHeaderSize) {
    vec[n++] = iovec{const_cast<uint8_t*>(f.hdr) + skip, wire::kHeaderSize - skip};
    skip = 0;
  } else {
    skip -= wire::kHeaderSize;
  }
  for (uint32_t i = 0; i < f.data_count; ++i) {
    if (skip >= f.data[i].iov_len) {
      skip -= f.data[i].iov_len;
      continue;
    }
    vec[n++] = iovec{static_cast<uint8_t*>(f.data[i].iov_base) + skip, f.data[i].iov_len - skip};
    skip = 0;
  }
  return n;
}

}  // namespace

bool TcpConn::send_locked(TxFrame& frame) {
  // Get requests and puts of up to 64 KiB (kHeldPutMax) posted back to
  // back leave together. The first goes at once; one posted after it
  // before a caller-driven loop's next wait joins the queue, which that
  // wait sends in one sendmsg (EPOLLOUT).
  // Sent one by one, each frame of a batch cost a system call and a packet
  // through the stack on both sides: with the frames queued, batches of 128
  // moved 1.15-1.27x as much at 64 KiB reads, 2.9x at 4 KiB reads and
  // 1.7x at 64 KiB writes (docs/performance.md). A loop on its own thread
  // would take the queue from there, a thread hop for every operation: its
  // frames leave at once.
  const uint64_t wait = frame.burst ? loop_->progress_count() : 0;
  const bool hold = frame.burst && !loop_->is_running() && burst_wait_ == wait;
  if (!hold && !dead_ && !connecting_ && !broken_ && tx_.empty() && !in_rx_) {
    if (frame.burst) burst_wait_ = wait;
    // Straight from the caller's frame: it joins the queue only if the
    // socket does not take all of it.
    iovec vec[kMaxFrameIov + 1];
    bool revoked = false;
    const ssize_t n = sendmsg_locked(vec, unsent_iov(frame, vec), frame.region.get(), &revoked);
    if (n >= 0 && static_cast<size_t>(n) == frame.total) return true;
    if (n > 0) frame.sent = static_cast<size_t>(n);
    if (frame.reply) ++replies_queued_;
    tx_.push_back(std::move(frame));
    if (n < 0 && errno != EAGAIN && errno != EINTR) {
      if (loop_->in_loop_thread()) {
        fail_locked(Status::ConnectionReset, "send failed: " + ucs::errno_string(errno), false);
        return false;
      }
      // Failing needs the loop thread (it removes fds); hand it the error.
      broken_ = true;
      broken_errno_ = errno;
    }
    update_events_locked();
    return false;
  }
  if (frame.reply) ++replies_queued_;
  tx_.push_back(std::move(frame));
  // While receiving, recv_locked() sends the queue when it is done and sets
  // the events then: a reply costs no EPOLLOUT on and off (two epoll_ctl).
  if (!in_rx_) update_events_locked();
  return false;
}

ssize_t TcpConn::send_front_locked(bool* revoked) {
  iovec vec[kMaxSendIov];
  size_t n = 0;
  TcpRegion* region = nullptr;
  for (TxFrame& f : tx_) {
    // Frames from registered memory are sent under their region's lock:
    // one region per sendmsg.
    if (f.region && region && f.region.get() != region) break;
    if (n + 1 + f.data_count > kMaxSendIov) break;
    n += unsent_iov(f, vec + n);
    if (f.region) region = f.region.get();
  }
  return sendmsg_locked(vec, n, region, revoked);
}

ssize_t TcpConn::sendmsg_locked(iovec* vec, size_t n, TcpRegion* region, bool* revoked) {
  if (!region && n > 1) {
    // A small message goes out in one piece: send() takes no iovec array
    // to import, which is most of the system call's overhead at this size.
    size_t total = 0;
    for (size_t i = 0; i < n; ++i) total += vec[i].iov_len;
    if (total <= kSmallSend) {
      uint8_t buf[kSmallSend];
      size_t off = 0;
      for (size_t i = 0; i < n; ++i) {
        std::memcpy(buf + off, vec[i].iov_base, vec[i].iov_len);
        off += vec[i].iov_len;
      }
      ssize_t w;
      do {
        w = send(fd_, buf, total, MSG_NOSIGNAL | MSG_DONTWAIT);
      } while (w < 0 && errno == EINTR);
      return w;
    }
  }
  msghdr msg{};
  msg.msg_iov = vec;
  msg.msg_iovlen = n;
  std::shared_lock<std::shared_mutex> use;
  if (region) {
    use = std::shared_lock(region->use);
    if (region->revoked) {
      *revoked = true;
      errno = EFAULT;
      return -1;
    }
  }
  ssize_t w;
  do {
    w = sendmsg(fd_, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
  } while (w < 0 && errno == EINTR);
  return w;
}

void TcpConn::advance_locked(size_t written) {
  while (written > 0 && !tx_.empty()) {
    TxFrame& f = tx_.front();
    const size_t left = f.total - f.sent;
    if (written < left) {
      f.sent += written;
      return;
    }
    written -= left;
    f.sent = f.total;
    if (f.reply) --replies_queued_;
    handler_->frame_sent(*this, f);
    tx_.pop_front();
  }
}

void TcpConn::flush_locked() {
  while (!tx_.empty() && !dead_) {
    bool revoked = false;
    const ssize_t n = send_front_locked(&revoked);
    if (n < 0) {
      if (errno == EAGAIN) break;
      const std::string why = revoked ? "a region was deregistered while a peer read it"
                                      : "send failed: " + ucs::errno_string(errno);
      if (loop_->in_loop_thread()) {
        fail_locked(Status::ConnectionReset, why, false);
        return;
      }
      broken_ = true;
      broken_errno_ = errno;
      break;
    }
    advance_locked(static_cast<size_t>(n));
  }
  update_events_locked();
}

void TcpConn::recv_locked() {
  // Replies to a burst of requests leave in one sendmsg when it is done.
  in_rx_ = true;
  recv_rounds_locked();
  in_rx_ = false;
  if (!dead_ && !tx_.empty()) flush_locked();
}

void TcpConn::recv_rounds_locked() {
  // A read that returns less than it asked for has (all but certainly)
  // emptied the socket: stop there instead of paying a system call for the
  // EAGAIN. The fd is level-triggered, so bytes that arrive later, or a
  // remainder, are reported by the next wait.
  bool drained = false;
  for (int round = 0; round < kRecvRounds && !dead_; ++round) {
    if (!consume_locked() || paused_ || rx_stalled_ || drained) return;
    ssize_t n;
    if (rx_state_ == RxState::Payload && rx_len() == 0 && !sink_.discard && !sink_.revoked &&
        sink_.remaining() >= kDirectRecvMin) {
      const size_t want = sink_.remaining();
      n = sink_.readv_from(fd_);
      if (n == 0 && sink_.revoked) continue;  // the rest goes through the buffer, dropped
      if (n > 0) {
        drained = static_cast<size_t>(n) < want;
        if (sink_.remaining() == 0) end_frame_locked();
        continue;
      }
    } else {
      if (rx_start_ > 0) {
        std::memmove(rx_buf_.data(), rx_buf_.data() + rx_start_, rx_len());
        rx_end_ -= rx_start_;
        rx_start_ = 0;
      }
      // In a stream of large payloads, up to the next header only: a full
      // buffer would take most of the next payload as well and copy it once
      // more (tcp fan-in to one target: a fifth of its time in that copy).
      // One more read per large frame; small frames fill the buffer.
      size_t want = rx_buf_.size() - rx_end_;
      if (rx_large_ && rx_len() == 0) {
        const size_t rest = rx_state_ == RxState::Payload ? sink_.remaining() : 0;
        want = std::min(want, rest + wire::kHeaderSize);
      }
      n = recv(fd_, rx_buf_.data() + rx_end_, want, MSG_DONTWAIT);
      if (n > 0) {
        drained = static_cast<size_t>(n) < want;
        rx_end_ += static_cast<size_t>(n);
        if (drained && !shared) {
          // Delay the ACKs of small messages rather than send one segment
          // per message. A shared connection needs no system call for it:
          // the kernel sees the replies follow the requests (pingpong) and
          // lets them carry the ACKs.
          int zero = 0;
          (void)setsockopt(fd_, IPPROTO_TCP, TCP_QUICKACK, &zero, sizeof(zero));
        }
        continue;
      }
    }
    if (n == 0) {
      const bool clean = rx_state_ == RxState::Header && rx_len() == 0;
      fail_locked(Status::ConnectionReset,
                  clean ? "closed by the peer" : "closed by the peer in the middle of a frame",
                  clean);
      return;
    }
    if (errno == EAGAIN) return;
    if (errno == EINTR) continue;
    fail_locked(Status::ConnectionReset, "receive failed: " + ucs::errno_string(errno), false);
    return;
  }
  if (!dead_ && !paused_ && !rx_stalled_) (void)consume_locked();
}

bool TcpConn::consume_locked() {
  while (!dead_) {
    if (rx_state_ == RxState::Header) {
      if (paused_ || rx_len() < wire::kHeaderSize) return true;
      if (backlogged()) {
        rx_stalled_ = true;
        return true;
      }
      std::string why;
      auto h = wire::decode({rx_buf_.data() + rx_start_, wire::kHeaderSize}, limits_, &why);
      if (!h.ok()) {
        fail_locked(Status::BadData, "malformed frame: " + why, false);
        return false;
      }
      rx_start_ += wire::kHeaderSize;
      rx_hdr_ = *h;
      sink_ = RxSink{};
      const Status s = handler_->begin_frame(*this, rx_hdr_, &sink_, &why);
      if (dead_) return false;
      if (is_error(s)) {
        fail_locked(s, why, false);
        return false;
      }
      sink_.total = rx_hdr_.length;
      rx_large_ = !sink_.discard && sink_.total >= kDirectRecvMin;
      drop_stale_put_locked();
      size_t seg_total = 0;
      for (uint32_t i = 0; i < sink_.seg_count; ++i) seg_total += sink_.seg[i].iov_len;
      if (!sink_.discard && seg_total != sink_.total) {
        fail_locked(Status::BadData, "frame payload does not match its destination", false);
        return false;
      }
      if (sink_.total == 0) {
        end_frame_locked();
      } else {
        rx_state_ = RxState::Payload;
      }
    } else {
      if (rx_len() == 0) return true;
      const size_t n = std::min(rx_len(), sink_.remaining());
      sink_.write(rx_buf_.data() + rx_start_, n);
      rx_start_ += n;
      if (sink_.remaining() == 0) end_frame_locked();
    }
  }
  return false;
}

void TcpConn::drop_reply_locked() {
  if (rx_state_ != RxState::Payload || rx_hdr_.op != wire::Op::GetResp) return;
  sink_.discard = true;
}

void TcpConn::drop_stale_put_locked() {
  if (!hung_up_ || rx_hdr_.op != wire::Op::Put || sink_.discard) return;
  if (rx_state_ != RxState::Payload && sink_.total == 0) return;
  // The peer closed (or this side was shut down): it will never read the
  // put's ack, so it counts the put as failed and may send it again on
  // another connection. Writing the rest now could land after that copy
  // completed, into memory its owner has reused.
  MC_LOG(debug) << "tcp: " << name_ << " hung up; dropping the rest of a put (" << sink_.remaining()
                << " of " << sink_.total << " bytes)";
  sink_.discard = true;
  sink_.region.reset();
  sink_.status = Status::ConnectionReset;  // the ack, should the peer still read
}

void TcpConn::end_frame_locked() {
  rx_state_ = RxState::Header;
  std::string why;
  const Status s = handler_->end_frame(*this, rx_hdr_, sink_, &why);
  sink_ = RxSink{};  // drops the region reference
  if (is_error(s)) fail_locked(s, why, false);
}

}  // namespace mc::uct::tcp
