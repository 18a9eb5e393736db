// SPDX-License-Identifier: Apache-2.0
// The target side of the wire protocol, on the iface's loop thread: active
// messages are queued for progress(); puts and gets are served at once, but
// only inside a live registration whose key, access and bounds match.
#include "ucs/log/log.h"
#include "uct/tcp/tcp_iface.h"

namespace mc::uct::tcp {

void TcpIface::reply(TcpConn& conn, TxFrame frame) {
  // A reply written at once needs no cleanup: it owns nothing but a region
  // reference, which `frame` drops here.
  (void)conn.send_locked(frame);
}

Status TcpIface::begin_frame(TcpConn& conn, const wire::FrameHeader& h, RxSink* sink,
                             std::string* why) {
  switch (h.op) {
    case wire::Op::Am:
      sink->owned.resize(h.length);
      sink->add(sink->owned.data(), h.length);
      return Status::Ok;
    case wire::Op::Put: {
      std::string refused;
      auto region = md_->find_region(h.region_id, h.region_key, h.remote_addr, h.length,
                                     kAccessRemoteWrite, &refused);
      if (!region.ok()) {
        MC_LOG(warn) << "tcp: refused a put of " << h.length << " bytes from " << conn.name()
                     << ": " << refused;
        sink->discard = true;
        sink->status = region.status();
        return Status::Ok;
      }
      sink->region = std::move(*region);
      sink->add(reinterpret_cast<void*>(h.remote_addr), h.length);
      return Status::Ok;
    }
    case wire::Op::GetReq: serve_get(conn, h); return Status::Ok;
    case wire::Op::Ping: {
      wire::FrameHeader pong;
      pong.op = wire::Op::Pong;
      pong.req_id = h.req_id;
      reply(conn, TxFrame(pong));
      return Status::Ok;
    }
    case wire::Op::PutAck:
    case wire::Op::GetResp:
    case wire::Op::Pong: break;
  }
  *why = "unexpected reply frame (op " + std::to_string(static_cast<int>(h.op)) +
         ") on an accepted connection";
  return Status::BadData;
}

void TcpIface::serve_get(TcpConn& conn, const wire::FrameHeader& h) {
  wire::FrameHeader resp;
  resp.op = wire::Op::GetResp;
  resp.req_id = h.req_id;
  std::string refused;
  auto region = md_->find_region(h.region_id, h.region_key, h.remote_addr, h.get_length,
                                 kAccessRemoteRead, &refused);
  if (!region.ok()) {
    MC_LOG(warn) << "tcp: refused a get of " << h.get_length << " bytes from " << conn.name()
                 << ": " << refused;
    resp.status = region.status();
    reply(conn, TxFrame(resp));
    return;
  }
  // The reply is sent straight from the registered memory; the region
  // reference lets the sender check it is still registered at each write.
  resp.length = h.get_length;
  TxFrame frame(resp);
  frame.add(reinterpret_cast<const void*>(h.remote_addr), h.get_length);
  frame.region = std::move(*region);
  reply(conn, std::move(frame));
}

Status TcpIface::end_frame(TcpConn& conn, const wire::FrameHeader& h, RxSink& sink, std::string*) {
  if (h.op == wire::Op::Am) {
    Event ev;
    ev.type = Event::Type::Am;
    ev.am_id = h.am_id;
    ev.data = std::move(sink.owned);
    push_event(std::move(ev));
    // Flow control: a user who does not progress stops this connection,
    // and TCP stops its sender, instead of the backlog growing unbounded.
    if (am_queued_.fetch_add(1) + 1 >= config_.am_queue_len) {
      conn.pause_locked();
      std::lock_guard guard(conns_lock_);
      auto it = passive_.find(&conn);
      if (it != passive_.end()) paused_.push_back(it->second);
      any_paused_.store(true);
    }
  } else if (h.op == wire::Op::Put) {
    wire::FrameHeader ack;
    ack.op = wire::Op::PutAck;
    ack.req_id = h.req_id;
    ack.status = sink.status;
    if (sink.revoked) {
      MC_LOG(warn) << "tcp: region " << h.region_id << " was deregistered during a put from "
                   << conn.name();
      ack.status = Status::Rejected;
    }
    reply(conn, TxFrame(ack));
  }
  return Status::Ok;
}

void TcpIface::conn_failed(TcpConn& conn, Status status, const std::string& why, bool clean) {
  if (clean) {
    MC_LOG(debug) << "tcp: connection from " << conn.name() << " closed";
  } else {
    MC_LOG(error) << "tcp: closing the connection from " << conn.name() << ": " << why << " ("
                  << status << ")";
  }
  conn.close_locked();
  conn.tx_locked().clear();
  std::lock_guard guard(conns_lock_);
  passive_.erase(&conn);
}

}  // namespace mc::uct::tcp
