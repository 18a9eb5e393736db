// SPDX-License-Identifier: Apache-2.0
// RC endpoint (rc_verbs, rc_mlx5): connection, flush, fence, failure.
#include "uct/ib/rc/rc_ep.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "ucs/log/log.h"
#include "uct/ib/rc/rc_iface.h"

namespace mc::uct::ib::rc {

Result<std::unique_ptr<RcEp>> RcEp::create(RcIface* iface, const DeviceAddr& peer,
                                           const IfaceAddr& addr) {
  std::unique_ptr<RcEp> ep(new RcEp(iface));
  ep->peer_ = peer;
  ConnMsg req;
  req.dev = iface->local_device();
  req.mtu = iface->mtu_bytes();
  for (uint64_t i = 0; i < iface->config().num_qp_per_ep; ++i) {
    MC_ASSIGN_OR_RETURN(std::unique_ptr<RcQp> qp,
                        RcQp::create(iface, iface->next_cq_index(), ep.get()));
    req.qps.push_back(qp->local_info());
    ep->qps_.push_back(std::move(qp));
  }
  MC_ASSIGN_OR_RETURN(ep->fd_, oob_connect(addr));
  MC_RETURN_IF_ERROR(oob_send(ep->fd_, pack_framed(req)));
  MC_RETURN_IF_ERROR(iface->watch(ep->fd_, ep.get()));
  iface->ep_add(ep.get());
  return ep;
}

RcEp::~RcEp() {
  iface_->ep_remove(this);
  for (FlushReq& f : flushes_) completion_update(f.comp, Status::Canceled);
  if (fd_ >= 0) {
    iface_->unwatch(fd_);
    close(fd_);
  }
}

void RcEp::on_oob_event() {
  if (connected_ || failed()) {
    // Nothing more is sent on this socket: readable means the peer closed it.
    char byte;
    const ssize_t n = ::recv(fd_, &byte, 1, MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
      iface_->unwatch(fd_);
      if (!failed()) {
        MC_LOG(warn) << iface_->tl_name() << ": the peer closed the connection of an endpoint";
        fail(Status::ConnectionReset);
      }
    }
    return;
  }
  const Status s = reader_.read(fd_);
  if (s == Status::InProgress) return;
  if (s != Status::Ok) {
    MC_LOG(error) << iface_->tl_name() << ": connection to the peer failed before its reply ("
                  << status_string(s) << ")";
    iface_->unwatch(fd_);
    fail(Status::ConnectionReset);
    return;
  }
  std::string why;
  Result<ConnMsg> reply = unpack_conn_msg(reader_.body(), &why);
  if (!reply.ok() || reply->qps.size() != qps_.size()) {
    MC_LOG(error) << iface_->tl_name()
                  << ": bad connection reply: " << (reply.ok() ? "queue pair count differs" : why);
    fail(Status::BadData);
    return;
  }
  for (size_t i = 0; i < qps_.size(); ++i) {
    const Status c = qps_[i]->connect(reply->qps[i], reply->dev, reply->mtu);
    if (c != Status::Ok) {
      fail(c);
      return;
    }
  }
  connected_ = true;
}

void RcEp::fail(Status status) {
  if (failed()) return;
  status_ = is_error(status) ? status : Status::IoError;
  for (auto& qp : qps_) qp->fail_all(status_);
  for (FlushReq& f : flushes_) completion_update(f.comp, status_);
  flushes_.clear();
  iface_->report_failure(this, status_);
}

bool RcEp::idle() const {
  for (const auto& qp : qps_) {
    if (!qp->empty()) return false;
  }
  return true;
}

Status RcEp::ready(const RcQp& qp) const {
  if (failed()) return status_;
  if (!connected_) return Status::NoResource;
  if (fenced_) {
    if (!idle()) return Status::NoResource;
    const_cast<RcEp*>(this)->fenced_ = false;
  }
  return qp.has_credit() ? Status::Ok : Status::NoResource;
}

Status RcEp::flush(Completion* comp) {
  if (failed()) return status_;
  if (!connected_) return Status::NoResource;
  if (idle()) return Status::Ok;
  FlushReq req{comp, {}};
  for (auto& qp : qps_) {
    MC_RETURN_IF_ERROR(qp->post_signal());
    req.upto.push_back(qp->last_sn());
  }
  if (!comp) return Status::InProgress;
  flushes_.push_back(std::move(req));
  return Status::InProgress;
}

void RcEp::check_flushes() {
  for (size_t i = 0; i < flushes_.size();) {
    bool done = true;
    for (size_t q = 0; q < qps_.size(); ++q) done = done && qps_[q]->done_upto(flushes_[i].upto[q]);
    if (!done) {
      ++i;
      continue;
    }
    Completion* comp = flushes_[i].comp;
    flushes_.erase(flushes_.begin() + static_cast<long>(i));
    completion_update(comp, Status::Ok);
  }
}

Status RcEp::fence() {
  if (failed()) return status_;
  // Queue pairs are ordered each, not with each other: later operations
  // wait until everything before the fence completed.
  if (qps_.size() > 1 && !idle()) fenced_ = true;
  return Status::Ok;
}

Status RcEp::pending_add(PendingReq* req) {
  if (failed()) return status_;
  if (ready(*qps_[0]) == Status::Ok && iface_->tx_pool().available() > 0) return Status::Busy;
  iface_->pending().push(req);
  return Status::Ok;
}

void RcEp::pending_purge(const std::function<void(PendingReq*)>& cb) {
  iface_->pending().purge(cb);
}

Status RcEp::check() {
  return failed() ? status_ : Status::Ok;
}

Status RcEp::connect_status() {
  if (failed()) return status_;
  return connected_ ? Status::Ok : Status::InProgress;
}

}  // namespace mc::uct::ib::rc
