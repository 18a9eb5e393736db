// SPDX-License-Identifier: Apache-2.0
// Every frame of every connection of an iface, on its loop thread: the
// handshake that decides which connection an endpoint sends on (Hello,
// HelloAck, Bye), the target side of the protocol (active messages are
// queued for progress(); puts and gets are served at once, but only inside a
// live registration whose key, access and bounds match), and replies, which
// go to the endpoint that sends on the connection.
#include <cstring>

#include "ucs/log/log.h"
#include "uct/tcp/tcp_iface.h"

namespace mc::uct::tcp {

namespace {

std::string op_name(wire::Op op) { return "op " + std::to_string(static_cast<int>(op)); }

}  // namespace

void TcpIface::reply(TcpConn& conn, TxFrame frame) {
  // A reply written at once needs no cleanup: it owns nothing but a region
  // reference, which `frame` drops here.
  frame.reply = true;
  (void)conn.send_locked(frame);
}

void TcpIface::on_hello(TcpConn& conn, const wire::FrameHeader& h) {
  conn.hello_seen = true;
  conn.peer_id = h.remote_addr;
  if (h.get_length != 0) return;  // a striping connection: requests only, no verdict
  conn.shareable = true;
  // An endpoint of ours to the same peer that has not settled: told to
  // adopt (Yielded) first, else one still waiting for its own verdict.
  TcpEp* pick = nullptr;
  for (TcpEp* ep : eps_) {
    if (ep->peer_id() != conn.peer_id || ep->closing_) continue;
    const ShareState st = ep->share_state_locked();
    if (st == ShareState::Yielded) {
      pick = ep;
      break;
    }
    if (st == ShareState::Seeking && !ep->promised_locked() && !pick) pick = ep;
  }
  wire::Verdict verdict = wire::Verdict::Own;
  if (pick) {
    // Two primaries cross: the lower address's wins.
    const bool adopt =
        pick->share_state_locked() == ShareState::Yielded || conn.peer_id < hello_identity();
    verdict = adopt ? wire::Verdict::Shared : wire::Verdict::Yield;
    if (!adopt) pick->promise_locked();
  }
  MC_LOG(debug) << "tcp: hello from " << conn.name() << ": "
                << (verdict == wire::Verdict::Shared  ? "shared with our endpoint"
                    : verdict == wire::Verdict::Yield ? "to adopt our endpoint's connection"
                                                      : "its own");
  // The verdict goes first: what our endpoint had waiting follows it.
  wire::FrameHeader ack;
  ack.op = wire::Op::HelloAck;
  ack.req_id = static_cast<uint64_t>(verdict);
  reply(conn, TxFrame(ack));
  if (verdict == wire::Verdict::Shared) pick->adopt_locked(conn.shared_from_this());
}

Status TcpIface::begin_frame(TcpConn& conn, const wire::FrameHeader& h, RxSink* sink,
                             std::string* why) {
  if (conn.accepted && !conn.hello_seen) {
    if (h.op != wire::Op::Hello) {
      *why = "the first frame is not a hello (" + op_name(h.op) + ")";
      return Status::BadData;
    }
    on_hello(conn, h);
    return Status::Ok;
  }
  switch (h.op) {
    case wire::Op::Hello: *why = "a second hello"; return Status::BadData;
    case wire::Op::HelloAck:
      if (conn.accepted || conn.index != 0 || conn.verdict_seen) {
        *why = "a hello ack that answers no hello";
        return Status::BadData;
      }
      conn.verdict_seen = true;
      if (conn.owner) conn.owner->on_verdict_locked(static_cast<wire::Verdict>(h.req_id));
      return Status::Ok;
    case wire::Op::Bye:
      if (conn.got_bye) {
        *why = "a second bye";
        return Status::BadData;
      }
      conn.got_bye = true;
      if (!conn.owner) {
        MC_LOG(debug) << "tcp: connection " << conn.name() << " no longer used; closing it";
        conn.close_locked();
        conn.clear_tx_locked();
        forget_locked(conn);
      }
      return Status::Ok;
    case wire::Op::PutAck:
    case wire::Op::GetResp:
    case wire::Op::Pong:
      if (conn.owner) return conn.owner->begin_frame(conn, h, sink, why);
      if (conn.sent_bye) {
        sink->discard = true;  // for an endpoint that is gone
        return Status::Ok;
      }
      *why = "a reply (" + op_name(h.op) + ") on a connection no endpoint sends on";
      return Status::BadData;
    case wire::Op::Am:
    case wire::Op::Put:
    case wire::Op::GetReq:
    case wire::Op::Ping: break;
  }
  // The peer may send requests on a primary of ours once it had its
  // verdict: it adopted it then, or later for an endpoint it created since.
  if (conn.got_bye || (!conn.accepted && (conn.index != 0 || !conn.verdict_seen))) {
    *why = "a request (" + op_name(h.op) + ") on a connection the peer does not send on";
    return Status::BadData;
  }
  conn.shared = true;
  return begin_request(conn, h, sink, why);
}

Status TcpIface::begin_request(TcpConn& conn, const wire::FrameHeader& h, RxSink* sink,
                               std::string* why) {
  switch (h.op) {
    case wire::Op::Am:
      if (h.length <= kSmallAm) {
        sink->add(sink->small.data(), h.length);
      } else {
        sink->owned.resize(h.length);
        sink->add(sink->owned.data(), h.length);
      }
      return Status::Ok;
    case wire::Op::Put: {
      std::string refused;
      auto region = md_->find_region(h.region_id, h.region_key, h.remote_addr, h.length,
                                     kAccessRemoteWrite, &refused);
      if (!region.ok()) {
        if (const ucs::RateLimiter::Verdict v = refused_log_.check(); v.log) {
          MC_LOG(warn) << "tcp: refused a put of " << h.length << " bytes from " << conn.name()
                       << ": " << refused << v.note();
        }
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
    default: break;
  }
  *why = "not a request: " + op_name(h.op);
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
    if (const ucs::RateLimiter::Verdict v = refused_log_.check(); v.log) {
      MC_LOG(warn) << "tcp: refused a get of " << h.get_length << " bytes from " << conn.name()
                   << ": " << refused << v.note();
    }
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

Status TcpIface::end_frame(TcpConn& conn, const wire::FrameHeader& h, RxSink& sink,
                           std::string* why) {
  if (h.op == wire::Op::PutAck || h.op == wire::Op::GetResp || h.op == wire::Op::Pong) {
    return conn.owner ? conn.owner->end_frame(conn, h, sink, why) : Status::Ok;
  }
  if (h.op == wire::Op::Am && direct_am_.load(std::memory_order_relaxed) &&
      am_queued_.load(std::memory_order_relaxed) == 0) {
    // This iface's progress() drives the loop on the user's thread and no
    // message read earlier (by another iface's progress() on a shared loop)
    // waits in the queue: the handler runs now (as UCX calls it from its
    // read), without our lock, which its own sends on our endpoints take.
    const uint8_t* data = h.length <= kSmallAm ? sink.small.data() : sink.owned.data();
    lock_.unlock();
    (void)invoke_am(h.am_id, data, h.length, 0);
    lock_.lock();
    ++direct_ams_;
  } else if (h.op == wire::Op::Am) {
    Event ev;
    ev.type = Event::Type::Am;
    ev.am_id = h.am_id;
    ev.length = h.length;
    if (h.length <= kSmallAm) {
      std::memcpy(ev.small.data(), sink.small.data(), h.length);
    } else {
      ev.data = std::move(sink.owned);
    }
    push_event(std::move(ev));
    // Flow control: a user who does not progress stops this connection,
    // and TCP stops its sender, instead of the backlog growing unbounded.
    if (am_queued_.fetch_add(1) + 1 >= config_.am_queue_len) {
      conn.pause_locked();
      paused_.push_back(conn.weak_from_this());
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

void TcpIface::frame_sent(TcpConn& conn, TxFrame& frame) {
  if (conn.owner) {
    conn.owner->frame_sent(conn, frame);
  } else if (frame.bounce) {
    bounce_pool_->put(std::exchange(frame.bounce, nullptr));
  }
}

void TcpIface::connected(TcpConn& conn) {
  if (conn.owner) conn.owner->connected(conn);
}

void TcpIface::conn_failed(TcpConn& conn, Status status, const std::string& why, bool clean) {
  if (conn.owner) {
    conn.owner->conn_failed(conn, status, why, clean);  // closes all of the endpoint's
    conn.close_locked();
    forget_locked(conn);
    return;
  }
  if (clean) {
    MC_LOG(debug) << "tcp: connection " << conn.name() << " closed";
  } else {
    MC_LOG(error) << "tcp: closing the connection " << conn.name() << ": " << why << " (" << status
                  << ")";
  }
  conn.close_locked();
  conn.clear_tx_locked();
  forget_locked(conn);
}

}  // namespace mc::uct::tcp
