// SPDX-License-Identifier: Apache-2.0
// tcp endpoint: connecting, the initiator side of the wire protocol,
// failure, completion, flush and tear-down.
#include "uct/tcp/tcp_ep.h"

#include <arpa/inet.h>

#include <algorithm>
#include <chrono>

#include "ucs/log/log.h"
#include "uct/tcp/tcp_iface.h"
#include "uct/tcp/tcp_socket.h"

namespace mc::uct::tcp {

namespace {

// How long an endpoint told to adopt the peer's connection waits for it
// before it sends on its own primary after all (two endpoints of the same
// pair of ifaces connecting at once can leave one without a partner).
constexpr auto kYieldWait = std::chrono::milliseconds(100);

}  // namespace

TcpEp::TcpEp(TcpIface* iface, uint32_t ipv4, uint16_t port)
    : iface_(iface),
      peer_(ip_string(ipv4) + ":" + std::to_string(port)),
      peer_id_(wire::hello_identity(ntohl(ipv4), port)),
      max_outstanding_(iface->config().max_outstanding),
      lock_(iface->lock()) {}

Result<std::unique_ptr<TcpEp>> TcpEp::create(TcpIface* iface, uint32_t ipv4, uint16_t port) {
  std::unique_ptr<TcpEp> ep(new TcpEp(iface, ipv4, port));
  const TcpConfig& config = iface->config();
  std::vector<std::shared_ptr<TcpConn>> opened;
  Status failed = Status::Ok;
  {
    std::lock_guard guard(ep->lock_);
    // The peer's endpoint to us may already have a primary we can share.
    if (auto shared = iface->find_adoptable_locked(ep->peer_id_)) {
      ep->conns_.push_back(shared);
      shared->owner = ep.get();
      shared->index = 0;
      shared->shared = true;
      ++ep->connected_;
      ep->share_ = ShareState::Settled;
    }
    for (uint32_t i = static_cast<uint32_t>(ep->conns_.size()); i < config.conns; ++i) {
      bool done = false;
      Result<int> fd = connect_socket(iface->device().ipv4, ipv4, port, config, &done);
      if (!fd.ok()) {
        failed = fd.status();
        break;
      }
      auto conn = std::make_shared<TcpConn>(*fd, !done, &ep->lock_, iface->conn_handler(),
                                            &iface->loop(), iface->limits(),
                                            ep->peer_ + "#" + std::to_string(i));
      conn->index = i;
      conn->owner = ep.get();
      conn->tx_backlog_limit = kTargetTxBacklog;
      if (done) ++ep->connected_;
      // First on every connection: who we are, and which connection it is.
      TxFrame hello(wire::hello_header(iface->hello_identity(), i));
      (void)conn->send_locked(hello);
      ep->conns_.push_back(conn);
      opened.push_back(std::move(conn));
    }
    if (failed == Status::Ok) iface->ep_created_locked(ep.get());
  }
  MC_RETURN_IF_ERROR(failed);  // the destructor closes what was opened
  // Until connected and settled; the timer finds out whether it still is.
  TcpEp* raw = ep.get();
  MC_ASSIGN_OR_RETURN(
      uint64_t timer,
      iface->loop().add_timer(config.conn_timeout, [raw] { raw->on_conn_timeout(); }, true));
  {
    std::lock_guard guard(ep->lock_);
    ep->conn_timer_ = timer;
  }
  // The callbacks may run as soon as a socket is attached: all is built.
  for (auto& conn : opened) MC_RETURN_IF_ERROR(conn->attach(conn));
  return ep;
}

TcpEp::~TcpEp() {
  if (iface_) shut_down(Status::Canceled);
}

void TcpEp::detach() {
  shut_down(Status::Canceled);
  iface_ = nullptr;
}

void TcpEp::shut_down(Status status) {
  uint64_t timers[2];
  std::shared_ptr<TcpConn> primary;
  {
    std::lock_guard guard(lock_);
    closing_ = true;
    timers[0] = std::exchange(conn_timer_, 0);
    timers[1] = std::exchange(yield_timer_, 0);
    iface_->ep_destroyed_locked(this);
    // A healthy primary may carry the peer's requests too: it stays open
    // (the iface keeps it) and only our part of it ends.
    if (!conns_.empty() && failed_ == Status::Ok && !conns_[0]->dead_locked()) {
      primary = conns_[0];
    }
  }
  // Without the lock: these wait for a callback in flight, which takes it.
  for (uint64_t timer : timers) {
    if (timer) (void)iface_->loop().cancel_timer(timer);
  }
  for (auto& conn : conns_) {
    if (conn != primary) conn->detach();
  }
  iface_->loop_barrier();

  std::vector<TcpRequest*> cut;
  {
    std::lock_guard guard(lock_);
    // Work still queued or unanswered is abandoned: reset, never delivered late.
    bool abandoned = !inflight_.empty() || failed_ != Status::Ok;
    for (auto& conn : conns_) abandoned = abandoned || !conn->tx_locked().empty();
    for (auto& conn : conns_) {
      if (conn == primary) {
        purge_frames_locked(*conn, &cut);
        // It stays open: a get's data still arriving on it must not land
        // in the buffer its request, canceled below, hands back.
        conn->drop_reply_locked();
        conn->owner = nullptr;
        iface_->release_primary_locked(conn);
        continue;
      }
      for (TxFrame& f : conn->tx_locked()) {
        release_bounce(f.bounce);
        if (f.req) cut.push_back(f.req);
      }
      conn->clear_tx_locked();
      close_conn_locked(*conn, abandoned);
    }
    for (TxFrame& f : std::exchange(waiting_, {})) {
      release_bounce(f.bounce);
      if (f.req) cut.push_back(f.req);
    }
    inflight_.for_each([&](uint64_t, Piece& piece) { cut.push_back(piece.req); });
    inflight_.clear();
    if (failed_ == Status::Ok) failed_ = status;
  }
  // What already finished keeps its status; what was cut short is canceled.
  for (TcpIface::Event& ev : iface_->take_events(this)) {
    if (ev.type == TcpIface::Event::Type::Done) complete(ev.req);
  }
  std::sort(cut.begin(), cut.end());
  cut.erase(std::unique(cut.begin(), cut.end()), cut.end());
  for (TcpRequest* req : cut) {
    if (req->status == Status::Ok) req->status = status;
    complete(req);
  }
  for (FlushWaiter& w : std::exchange(flush_.waiters, {})) completion_update(w.comp, status);
}

void TcpEp::purge_frames_locked(TcpConn& conn, std::vector<TcpRequest*>* cut) {
  conn.drop_tx_locked([](const TxFrame& f) { return f.req != nullptr || f.piece != 0; },
                      [&](TxFrame& f) {
                        release_bounce(std::exchange(f.bounce, nullptr));
                        if (f.req) cut->push_back(f.req);
                      });
}

void TcpEp::close_conn_locked(TcpConn& conn, bool abort) {
  conn.close_locked(abort);
  conn.owner = nullptr;
  iface_->forget_locked(conn);
}

void TcpEp::release_bounce(void* bounce) {
  if (bounce) iface_->bounce_pool().put(bounce);
}

void TcpEp::on_conn_timeout() {
  std::lock_guard guard(lock_);
  conn_timer_ = 0;  // a oneshot timer is gone once it fired
  if (closing_ || (share_ == ShareState::Settled && connected_ == conns_.size())) return;
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(iface_->config().conn_timeout);
  fail_locked(Status::Timeout, (connected_ == conns_.size() ? "no answer to the hello within "
                                                            : "not connected within ") +
                                   std::to_string(ms.count()) + " ms");
}

void TcpEp::on_yield_timeout() {
  std::lock_guard guard(lock_);
  yield_timer_ = 0;
  if (closing_ || failed_ != Status::Ok || share_ != ShareState::Yielded) return;
  MC_LOG(debug) << "tcp: " << peer_ << " offered no connection to share; using our own";
  settle_locked();
}

bool TcpEp::send_primary_locked(TxFrame& frame) {
  if (share_ != ShareState::Settled) {
    waiting_.push_back(std::move(frame));
    return false;
  }
  return conns_[0]->send_locked(frame);
}

void TcpEp::settle_locked() {
  share_ = ShareState::Settled;
  TcpConn& primary = *conns_[0];
  for (TxFrame& f : std::exchange(waiting_, {})) {
    TxFrame frame = std::move(f);
    if (primary.send_locked(frame)) frame_sent(primary, frame);
  }
  if (connected_ == conns_.size() && conn_timer_) {
    (void)iface_->loop().cancel_timer(conn_timer_);  // the loop thread: does not wait
    conn_timer_ = 0;
  }
}

void TcpEp::adopt_locked(const std::shared_ptr<TcpConn>& conn) {
  std::shared_ptr<TcpConn> own = std::exchange(conns_[0], conn);
  own->owner = nullptr;
  if (own->connected_locked()) --connected_;
  iface_->release_primary_locked(own);
  conn->owner = this;
  conn->index = 0;
  conn->shared = true;
  ++connected_;
  settle_locked();
}

void TcpEp::on_verdict_locked(wire::Verdict verdict) {
  if (closing_ || share_ != ShareState::Seeking) return;
  switch (verdict) {
    case wire::Verdict::Shared: conns_[0]->shared = true; [[fallthrough]];
    case wire::Verdict::Own: settle_locked(); return;
    case wire::Verdict::Yield: break;
  }
  share_ = ShareState::Yielded;
  if (auto conn = iface_->find_adoptable_locked(peer_id_)) {
    adopt_locked(conn);
    return;
  }
  TcpEp* raw = this;
  auto timer = iface_->loop().add_timer(kYieldWait, [raw] { raw->on_yield_timeout(); }, true);
  if (timer.ok()) {
    yield_timer_ = *timer;
  } else {
    settle_locked();
  }
}

void TcpEp::connected(TcpConn&) {
  if (++connected_ == conns_.size() && share_ == ShareState::Settled && conn_timer_) {
    (void)iface_->loop().cancel_timer(conn_timer_);  // the loop thread: does not wait
    conn_timer_ = 0;
  }
}

void TcpEp::conn_failed(TcpConn& conn, Status status, const std::string& why, bool clean) {
  fail_locked(status, "connection " + std::to_string(conn.index) + ": " + why, clean);
}

void TcpEp::fail_locked(Status status, const std::string& why, bool clean) {
  if (failed_ != Status::Ok || closing_) return;
  failed_ = status;
  // A peer that closed between frames went away on purpose (or exited):
  // the error handler reports it; the log need not shout.
  if (clean) {
    MC_LOG(warn) << "tcp: endpoint to " << peer_ << " closed: " << why;
  } else {
    MC_LOG(error) << "tcp: endpoint to " << peer_ << " failed: " << why << " (" << status << ")";
  }
  if (conn_timer_) {
    (void)iface_->loop().cancel_timer(conn_timer_);
    conn_timer_ = 0;
  }
  if (yield_timer_) {
    (void)iface_->loop().cancel_timer(yield_timer_);
    yield_timer_ = 0;
  }
  for (auto& conn : conns_) {
    for (TxFrame& f : conn->tx_locked()) {
      release_bounce(f.bounce);
      if (f.req) complete_piece_locked(f.req, status);
    }
    conn->clear_tx_locked();
    close_conn_locked(*conn, true);
  }
  for (TxFrame& f : std::exchange(waiting_, {})) {
    release_bounce(f.bounce);
    if (f.req) complete_piece_locked(f.req, status);
  }
  inflight_.for_each([&](uint64_t, Piece& piece) { complete_piece_locked(piece.req, status); });
  inflight_.clear();
  TcpIface::Event ev;
  ev.type = TcpIface::Event::Type::EpError;
  ev.ep = this;
  ev.status = status;
  iface_->push_event(std::move(ev));
}

void TcpEp::complete_piece_locked(TcpRequest* req, Status status) {
  if (is_error(status) && req->status == Status::Ok) req->status = status;
  if (--req->parts_left > 0) return;
  TcpIface::Event ev;
  ev.type = TcpIface::Event::Type::Done;
  ev.req = req;
  iface_->push_event(std::move(ev));
}

Status TcpEp::begin_frame(TcpConn& conn, const wire::FrameHeader& h, RxSink* sink,
                          std::string* why) {
  if (h.op == wire::Op::Pong) return Status::Ok;
  if (h.op != wire::Op::PutAck && h.op != wire::Op::GetResp) {
    *why = "unexpected frame (op " + std::to_string(static_cast<int>(h.op)) + ") from the target";
    return Status::BadData;
  }
  const Piece* found = inflight_.find(h.req_id);
  const auto kind = h.op == wire::Op::PutAck ? TcpRequest::Kind::Put : TcpRequest::Kind::Get;
  if (!found || found->req->kind != kind || found->conn != conn.index) {
    *why = "reply to unknown request " + std::to_string(h.req_id);
    return Status::BadData;
  }
  const Piece piece = *found;
  if (!piece.sent) {
    // The frame may still be read from the user's memory: completing now
    // would hand that memory back while we read it.
    *why = "reply to request " + std::to_string(h.req_id) + " before it was sent";
    return Status::BadData;
  }
  if (h.op == wire::Op::PutAck || h.status != Status::Ok) {
    if (is_error(h.status)) {
      MC_LOG(debug) << "tcp: " << peer_ << " refused request " << h.req_id << ": " << h.status;
    }
    inflight_.erase(h.req_id);
    complete_piece_locked(piece.req, h.status);
    return Status::Ok;
  }
  if (h.length != piece.length) {
    *why = "get reply of " + std::to_string(h.length) + " bytes for a request of " +
           std::to_string(piece.length);
    return Status::BadData;
  }
  // Data straight into the user's buffers (or the get_bcopy bounce buffer).
  sink->seg_count = slice_iov(piece.req->iov.data(), piece.req->iov_count, piece.offset,
                              piece.length, sink->seg.data());
  sink->cookie = h.req_id;
  return Status::Ok;
}

Status TcpEp::end_frame(TcpConn&, const wire::FrameHeader& h, RxSink& sink, std::string*) {
  if (h.op != wire::Op::GetResp || h.status != Status::Ok) return Status::Ok;
  const Piece* piece = inflight_.find(sink.cookie);
  if (!piece) return Status::Ok;  // cannot happen: failure clears both
  TcpRequest* req = piece->req;
  inflight_.erase(sink.cookie);
  complete_piece_locked(req, Status::Ok);
  return Status::Ok;
}

void TcpEp::frame_sent(TcpConn&, TxFrame& frame) {
  release_bounce(std::exchange(frame.bounce, nullptr));
  if (frame.piece) {
    if (Piece* piece = inflight_.find(frame.piece)) piece->sent = true;
  }
  if (frame.req) complete_piece_locked(std::exchange(frame.req, nullptr), Status::Ok);
}

void TcpEp::track(TcpRequest* req) {
  req->seq = iface_->next_seq();
  flush_.outstanding.insert(req->seq);
  iface_->track(req->seq);
  if (req->striped) ++striped_outstanding_;
}

void TcpEp::complete(TcpRequest* req) {
  TcpIface* iface = iface_;
  std::vector<std::pair<Completion*, Status>> flushed;
  if (req->striped) --striped_outstanding_;
  const bool reported = flush_.end(req->seq, req->status, &flushed) || req->comp != nullptr;
  if (is_error(req->status) && !reported && unreported_error_ == Status::Ok) {
    unreported_error_ = req->status;
  }
  iface->untrack(req->seq, req->status, &flushed);

  // User code from here on, which may destroy this endpoint.
  if (req->unpack && req->status == Status::Ok)
    req->unpack(req->unpack_arg, req->bounce, req->length);
  if (req->bounce) iface->bounce_pool().put(req->bounce);
  Completion* comp = req->comp;
  const Status status = req->status;
  iface->free_request(req);
  completion_update(comp, status);
  for (auto& [c, s] : flushed) completion_update(c, s);
}

bool FlushBook::end(uint64_t seq, Status status,
                    std::vector<std::pair<Completion*, Status>>* done) {
  outstanding.erase(seq);
  bool reached = false;
  if (is_error(status)) {
    for (FlushWaiter& w : waiters) {
      if (w.seq <= seq) continue;
      if (w.status == Status::Ok) w.status = status;
      reached = true;
    }
  }
  size_t k = 0;
  while (k < waiters.size() && !pending_before(waiters[k].seq)) {
    done->emplace_back(waiters[k].comp, waiters[k].status);
    ++k;
  }
  waiters.erase(waiters.begin(), waiters.begin() + static_cast<std::ptrdiff_t>(k));
  return reached;
}

void TcpEp::report_error(Status status) {
  if (error_reported_) return;
  error_reported_ = true;
  if (iface_ && iface_->err_handler()) iface_->err_handler()(this, status);
}

Status TcpEp::flush(Completion* comp) {
  if (!iface_) return Status::Canceled;
  const Status err = std::exchange(unreported_error_, Status::Ok);
  if (flush_.outstanding.empty()) {
    std::lock_guard guard(lock_);
    return failed_ != Status::Ok ? failed_ : err;
  }
  if (comp) flush_.waiters.push_back(FlushWaiter{iface_->peek_seq(), comp, err});
  return Status::InProgress;
}

bool TcpEp::fenced() const {
  return fence_seq_ != 0 && flush_.pending_before(fence_seq_);
}

Status TcpEp::fence() {
  if (!iface_) return Status::Canceled;
  // One connection is in order; only pieces on the others can overtake.
  if (striped_outstanding_ > 0) fence_seq_ = iface_->peek_seq();
  return Status::Ok;
}

Status TcpEp::admit() const {
  if (!iface_) return Status::Canceled;
  if (fenced() || flush_.outstanding.size() >= max_outstanding_) return Status::NoResource;
  return Status::Ok;
}

bool TcpEp::has_room() const {
  if (!iface_) return true;  // operations fail at once: nothing to wait for
  {
    std::lock_guard guard(lock_);
    if (failed_ != Status::Ok) return true;
  }
  return !fenced() && flush_.outstanding.size() < max_outstanding_ && iface_->bounce_available();
}

Status TcpEp::pending_add(PendingReq* req) {
  if (has_room()) return Status::Busy;
  pending_.push(req);
  return Status::Ok;
}

void TcpEp::pending_purge(const std::function<void(PendingReq*)>& cb) {
  pending_.purge(cb);
}

unsigned TcpEp::dispatch_pending() {
  if (pending_.empty() || !has_room()) return 0;
  return pending_.dispatch();
}

Status TcpEp::check() {
  if (!iface_) return Status::Canceled;
  std::lock_guard guard(lock_);
  if (failed_ != Status::Ok) return failed_;
  // A ping provokes a reset from a peer that is gone; keepalive covers idle.
  if (share_ == ShareState::Settled && conns_[0]->connected_locked() &&
      conns_[0]->tx_locked().empty()) {
    wire::FrameHeader ping;
    ping.op = wire::Op::Ping;
    ping.req_id = next_req_id_++;
    TxFrame frame(ping);
    (void)conns_[0]->send_locked(frame);
  }
  return Status::Ok;
}

Status TcpEp::connect_status() {
  if (!iface_) return Status::Canceled;
  std::lock_guard guard(lock_);
  if (failed_ != Status::Ok) return failed_;
  return connected_ == conns_.size() && share_ == ShareState::Settled ? Status::Ok
                                                                     : Status::InProgress;
}

}  // namespace mc::uct::tcp
