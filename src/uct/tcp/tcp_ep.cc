// SPDX-License-Identifier: Apache-2.0
// tcp endpoint: connecting, the initiator side of the wire protocol,
// failure, completion, flush and tear-down.
#include "uct/tcp/tcp_ep.h"

#include <algorithm>
#include <chrono>

#include "ucs/log/log.h"
#include "uct/tcp/tcp_iface.h"
#include "uct/tcp/tcp_socket.h"

namespace mc::uct::tcp {

TcpEp::TcpEp(TcpIface* iface, uint32_t ipv4, uint16_t port)
    : iface_(iface),
      peer_(ip_string(ipv4) + ":" + std::to_string(port)),
      max_outstanding_(iface->config().max_outstanding) {}

Result<std::unique_ptr<TcpEp>> TcpEp::create(TcpIface* iface, uint32_t ipv4, uint16_t port) {
  std::unique_ptr<TcpEp> ep(new TcpEp(iface, ipv4, port));
  const TcpConfig& config = iface->config();
  for (uint32_t i = 0; i < config.conns; ++i) {
    bool done = false;
    MC_ASSIGN_OR_RETURN(int fd, connect_socket(iface->device().ipv4, ipv4, port, config, &done));
    TcpConnHandler* handler = ep.get();
    auto conn =
        std::make_unique<TcpConn>(fd, !done, &ep->lock_, handler, &iface->loop(),
                                  iface->initiator_limits(), ep->peer_ + "#" + std::to_string(i));
    conn->index = i;
    if (done) ++ep->connected_;
    ep->conns_.push_back(std::move(conn));
  }
  if (ep->connected_ < ep->conns_.size()) {
    TcpEp* raw = ep.get();
    MC_ASSIGN_OR_RETURN(ep->conn_timer_,
                        iface->loop().add_timer(
                            config.conn_timeout, [raw] { raw->on_conn_timeout(); }, true));
  }
  // The callbacks may run as soon as a socket is attached: all is built.
  for (auto& conn : ep->conns_) MC_RETURN_IF_ERROR(conn->attach());
  return ep;
}

TcpEp::~TcpEp() {
  if (!iface_) return;
  shut_down(Status::Canceled);
  iface_->ep_destroyed(this);
}

void TcpEp::detach() {
  shut_down(Status::Canceled);
  iface_->ep_destroyed(this);
  iface_ = nullptr;
}

void TcpEp::shut_down(Status status) {
  uint64_t timer;
  {
    std::lock_guard guard(lock_);
    closing_ = true;
    timer = std::exchange(conn_timer_, 0);
  }
  // Without the lock: these wait for a callback in flight, which takes it.
  if (timer) (void)iface_->loop().cancel_timer(timer);
  for (auto& conn : conns_) conn->detach();
  iface_->loop_barrier();

  std::vector<TcpRequest*> cut;
  {
    std::lock_guard guard(lock_);
    // Work still queued or unanswered is abandoned: reset, never delivered late.
    bool abandoned = !inflight_.empty() || failed_ != Status::Ok;
    for (auto& conn : conns_) abandoned = abandoned || !conn->tx_locked().empty();
    for (auto& conn : conns_) {
      conn->close_locked(abandoned);
      for (TxFrame& f : conn->tx_locked()) {
        release_bounce(f.bounce);
        if (f.req) cut.push_back(f.req);
      }
      conn->tx_locked().clear();
    }
    for (auto& [id, piece] : inflight_) cut.push_back(piece.req);
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
  for (FlushWaiter& w : std::exchange(flush_waiters_, {})) completion_update(w.comp, status);
}

void TcpEp::release_bounce(void* bounce) {
  if (bounce) iface_->bounce_pool().put(bounce);
}

void TcpEp::on_conn_timeout() {
  std::lock_guard guard(lock_);
  conn_timer_ = 0;  // a oneshot timer is gone once it fired
  if (closing_ || connected_ == conns_.size()) return;
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(iface_->config().conn_timeout);
  fail_locked(Status::Timeout, "not connected within " + std::to_string(ms.count()) + " ms");
}

void TcpEp::connected(TcpConn&) {
  if (++connected_ == conns_.size() && conn_timer_) {
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
  for (auto& conn : conns_) {
    conn->close_locked(true);
    for (TxFrame& f : conn->tx_locked()) {
      release_bounce(f.bounce);
      if (f.req) complete_piece_locked(f.req, status);
    }
    conn->tx_locked().clear();
  }
  for (auto& [id, piece] : inflight_) complete_piece_locked(piece.req, status);
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
  auto it = inflight_.find(h.req_id);
  const auto kind = h.op == wire::Op::PutAck ? TcpRequest::Kind::Put : TcpRequest::Kind::Get;
  if (it == inflight_.end() || it->second.req->kind != kind || it->second.conn != conn.index) {
    *why = "reply to unknown request " + std::to_string(h.req_id);
    return Status::BadData;
  }
  const Piece piece = it->second;
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
    inflight_.erase(it);
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
  auto it = inflight_.find(sink.cookie);
  if (it == inflight_.end()) return Status::Ok;  // cannot happen: failure clears both
  TcpRequest* req = it->second.req;
  inflight_.erase(it);
  complete_piece_locked(req, Status::Ok);
  return Status::Ok;
}

void TcpEp::frame_sent(TcpConn&, TxFrame& frame) {
  release_bounce(std::exchange(frame.bounce, nullptr));
  if (frame.piece) {
    auto it = inflight_.find(frame.piece);
    if (it != inflight_.end()) it->second.sent = true;
  }
  if (frame.req) complete_piece_locked(std::exchange(frame.req, nullptr), Status::Ok);
}

void TcpEp::track(TcpRequest* req) {
  req->seq = iface_->next_seq();
  outstanding_.insert(req->seq);
  iface_->track(req->seq);
  if (req->striped) ++striped_outstanding_;
}

void TcpEp::complete(TcpRequest* req) {
  TcpIface* iface = iface_;
  std::vector<std::pair<Completion*, Status>> flushed;
  outstanding_.erase(req->seq);
  if (req->striped) --striped_outstanding_;
  bool reported = req->comp != nullptr;
  for (FlushWaiter& w : flush_waiters_) {
    if (is_error(req->status) && w.seq > req->seq) {
      if (w.status == Status::Ok) w.status = req->status;
      reported = true;
    }
  }
  size_t k = 0;
  while (k < flush_waiters_.size() &&
         (outstanding_.empty() || *outstanding_.begin() >= flush_waiters_[k].seq)) {
    flushed.emplace_back(flush_waiters_[k].comp, flush_waiters_[k].status);
    ++k;
  }
  flush_waiters_.erase(flush_waiters_.begin(), flush_waiters_.begin() + k);
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
  delete req;
  completion_update(comp, status);
  for (auto& [c, s] : flushed) completion_update(c, s);
}

void TcpEp::report_error(Status status) {
  if (error_reported_) return;
  error_reported_ = true;
  if (iface_ && iface_->err_handler()) iface_->err_handler()(this, status);
}

Status TcpEp::flush(Completion* comp) {
  if (!iface_) return Status::Canceled;
  const Status err = std::exchange(unreported_error_, Status::Ok);
  if (outstanding_.empty()) {
    std::lock_guard guard(lock_);
    return failed_ != Status::Ok ? failed_ : err;
  }
  if (comp) flush_waiters_.push_back(FlushWaiter{iface_->peek_seq(), comp, err});
  return Status::InProgress;
}

bool TcpEp::fenced() const {
  return fence_seq_ != 0 && !outstanding_.empty() && *outstanding_.begin() < fence_seq_;
}

Status TcpEp::fence() {
  if (!iface_) return Status::Canceled;
  // One connection is in order; only pieces on the others can overtake.
  if (striped_outstanding_ > 0) fence_seq_ = iface_->peek_seq();
  return Status::Ok;
}

Status TcpEp::admit() const {
  if (!iface_) return Status::Canceled;
  if (fenced() || outstanding_.size() >= max_outstanding_) return Status::NoResource;
  return Status::Ok;
}

bool TcpEp::has_room() const {
  if (!iface_) return true;  // operations fail at once: nothing to wait for
  {
    std::lock_guard guard(lock_);
    if (failed_ != Status::Ok) return true;
  }
  return !fenced() && outstanding_.size() < max_outstanding_ && iface_->bounce_available();
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
  if (conns_[0]->connected_locked() && conns_[0]->tx_locked().empty()) {
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
  return connected_ == conns_.size() ? Status::Ok : Status::InProgress;
}

}  // namespace mc::uct::tcp
