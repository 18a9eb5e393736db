// SPDX-License-Identifier: Apache-2.0
// RC iface (rc_verbs, rc_mlx5) progress: send and receive completions, and the
// out-of-band sockets (connection requests, replies, peers going away).
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "ucs/log/log.h"
#include "uct/ib/rc/rc_ep.h"
#include "uct/ib/rc/rc_iface.h"

namespace mc::uct::ib::rc {

namespace {

constexpr int kPollBatch = 16;

}  // namespace

RcIface::Accepted::~Accepted() {
  qps.clear();
  if (fd >= 0) close(fd);
}

unsigned RcIface::progress() {
  unsigned events = poll_send() + poll_recv() + poll_oob();
  check_flush_waiters();
  report_failures();
  events += pending_.dispatch();
  return events;
}

unsigned RcIface::poll_send() {
  unsigned events = 0;
  ibv_wc wc[kPollBatch];
  for (ibv_cq* cq : send_cqs_) {
    const int n = poll_cq(cq, kPollBatch, wc);
    if (n < 0) {
      MC_LOG_ONCE(error) << tl_name() << ": polling a send CQ of " << dev_->name()
                         << " failed (completion queue overrun)";
      for (RcEp* ep : eps_) ep->fail(Status::IoError);
      continue;
    }
    for (int i = 0; i < n; ++i) {
      auto it = qps_.find(wc[i].qp_num);
      if (it == qps_.end()) continue;  // its QP was destroyed
      RcQp* qp = it->second;
      const Status s = qp->on_send_completion(wc[i]);
      if (s != Status::Ok && qp->owner()) qp->owner()->fail(s);
      ++events;
    }
  }
  return events;
}

unsigned RcIface::poll_recv() {
  ibv_wc wc[kPollBatch];
  const int n = poll_cq(recv_cq_, kPollBatch, wc);
  if (n < 0) {
    MC_LOG_ONCE(error) << tl_name() << ": polling the receive CQ of " << dev_->name()
                       << " failed (completion queue overrun)";
    return 0;
  }
  for (int i = 0; i < n; ++i) {
    auto* buf = reinterpret_cast<uint8_t*>(wc[i].wr_id);
    auto it = qps_.find(wc[i].qp_num);
    if (it == qps_.end()) continue;  // destroyed: its buffers went back with it
    RcQp* qp = it->second;
    if (wc[i].status != IBV_WC_SUCCESS) {
      if (wc[i].status != IBV_WC_WR_FLUSH_ERR) {
        MC_LOG(error) << tl_name() << ": receive on QP " << qp->qpn()
                      << " failed: " << wc_status_string(wc[i].status);
      }
      qp->recv_returned(buf);
      rx_pool_->put(buf);
      continue;
    }
    // The length comes from the device (a CQE read directly for rc_mlx5):
    // never trusted past the buffer.
    if (wc[i].byte_len < 1 || wc[i].byte_len > rx_pool_->size() || buf[0] >= kAmIdMax) {
      MC_LOG(warn) << tl_name() << ": dropped a malformed active message of " << wc[i].byte_len
                   << " bytes on QP " << qp->qpn();
    } else {
      (void)invoke_am(buf[0], buf + 1, wc[i].byte_len - 1, 0);
    }
    // invoke_am may have run a handler that destroyed things; the QP lives
    // in accepted_, which handlers cannot reach.
    qp->repost(buf);
  }
  return static_cast<unsigned>(n);
}

unsigned RcIface::poll_oob() {
  epoll_event ev[kPollBatch];
  const int n = epoll_wait(epfd_, ev, kPollBatch, 0);
  for (int i = 0; i < n; ++i) {
    const int fd = ev[i].data.fd;
    auto ch = std::find_if(channels_.begin(), channels_.end(),
                           [fd](const ibv_comp_channel* c) { return c->fd == fd; });
    if (ch != channels_.end()) {
      drain_cq_events(*ch);
    } else if (fd == listen_fd_) {
      accept_all();
    } else if (auto a = accepted_.find(fd); a != accepted_.end()) {
      on_accepted_event(a->second.get());
    } else if (auto e = watched_eps_.find(fd); e != watched_eps_.end()) {
      e->second->on_oob_event();
    }
  }
  return n > 0 ? static_cast<unsigned>(n) : 0;
}

// Takes the events off the channel (the CQs are polled anyway); each is
// acknowledged, or destroying its CQ would wait for it.
void RcIface::drain_cq_events(ibv_comp_channel* channel) {
  ibv_cq* cq = nullptr;
  void* ctx = nullptr;
  while (dev_->ops().get_cq_event(channel, &cq, &ctx) == 0) {
    cq_event(cq);
    dev_->ops().ack_cq_events(cq, 1);
  }
}

void RcIface::accept_all() {
  for (;;) {
    const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        MC_LOG(error) << tl_name() << ": accept: " << std::strerror(errno);
      }
      return;
    }
    auto a = std::make_unique<Accepted>();
    a->fd = fd;
    if (watch(fd, nullptr) != Status::Ok) {
      close(fd);
      continue;
    }
    accepted_[fd] = std::move(a);
  }
}

void RcIface::on_accepted_event(Accepted* a) {
  if (!a->qps.empty()) {
    // Connected: the peer sends nothing more, so readable means it closed.
    char byte;
    const ssize_t n = ::recv(a->fd, &byte, 1, MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) drop_accepted(a);
    return;
  }
  const Status s = a->reader.read(a->fd);
  if (s == Status::InProgress) return;
  if (s != Status::Ok || accept_connect(a) != Status::Ok) drop_accepted(a);
}

Status RcIface::accept_connect(Accepted* a) {
  std::string why;
  Result<ConnMsg> req = unpack_conn_msg(a->reader.body(), &why);
  if (!req.ok()) {
    MC_LOG(error) << tl_name() << ": bad connection request: " << why;
    return Status::BadData;
  }
  const size_t rx = req->qps.size() * config_.rx_queue_len;
  if (rx_posted_ + rx > config_.max_cqe_per_ctx) {
    MC_LOG(error) << tl_name() << ": refused a connection: its " << rx
                  << " receives would overflow "
                  << "the receive CQ of " << config_.max_cqe_per_ctx
                  << " entries (MC_MAX_CQE_PER_CTX)";
    return Status::NoResource;
  }
  ConnMsg reply;
  reply.dev = local_device();
  reply.mtu = mtu_bytes();
  for (const QpInfo& remote : req->qps) {
    MC_ASSIGN_OR_RETURN(std::unique_ptr<RcQp> qp, RcQp::create(this, 0, nullptr));
    MC_RETURN_IF_ERROR(qp->post_recvs(config_.rx_queue_len));
    MC_RETURN_IF_ERROR(qp->connect(remote, req->dev, req->mtu));
    reply.qps.push_back(qp->local_info());
    a->qps.push_back(std::move(qp));
  }
  a->rx_posted = rx;
  rx_posted_ += rx;
  return oob_send(a->fd, pack_framed(reply));
}

void RcIface::drop_accepted(Accepted* a) {
  // Deliver what the peer sent before it went.
  while (poll_recv() > 0) {
  }
  unwatch(a->fd);
  rx_posted_ -= a->rx_posted;
  accepted_.erase(a->fd);
}

}  // namespace mc::uct::ib::rc
