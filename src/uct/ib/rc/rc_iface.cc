// SPDX-License-Identifier: Apache-2.0
// RC iface (rc_verbs, rc_mlx5): setup, attributes, addresses, endpoints, flush.
#include "uct/ib/rc/rc_iface.h"

#include <fcntl.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "ucs/log/log.h"
#include "uct/ib/rc/rc_ep.h"

namespace mc::uct::ib::rc {

RcIface::RcIface(IbMd* md, size_t dev_index, const RcConfig& config, const IfaceParams& params)
    : Iface(md),
      md_(md),
      dev_index_(dev_index),
      dev_(md->devices()[dev_index].get()),
      config_(config),
      err_handler_(params.err_handler) {}

Result<std::unique_ptr<RcIface>> RcIface::create(IbMd* md, size_t dev_index, const RcConfig& config,
                                                 const IfaceParams& params) {
  std::unique_ptr<RcIface> iface(new RcIface(md, dev_index, config, params));
  MC_ASSIGN_OR_RETURN(uint32_t ip, oob_address(config.oob_addr, iface->dev_->gid()));
  MC_RETURN_IF_ERROR(iface->init(ip));
  return iface;
}

Status RcIface::init(uint32_t oob_ip) {
  const VerbsOps& ops = dev_->ops();
  const int cqe = static_cast<int>(config_.max_cqe_per_ctx);
  MC_RETURN_IF_ERROR(open_channels());
  // CQ i reports to channel i mod the channel count.
  auto channel_of = [this](size_t i) {
    return channels_.empty() ? nullptr : channels_[i % channels_.size()];
  };
  for (uint64_t i = 0; i < config_.num_cq_per_ctx; ++i) {
    ibv_cq* cq = ops.create_cq(dev_->context(), cqe, nullptr, channel_of(i), 0);
    if (!cq) {
      MC_LOG(error) << tl_name() << ": ibv_create_cq of " << cqe << " entries on " << dev_->name()
                    << ": " << std::strerror(errno);
      return Status::IoError;
    }
    send_cqs_.push_back(cq);
    cq_credits_.push_back(static_cast<size_t>(cqe));
  }
  recv_cq_ = ops.create_cq(dev_->context(), cqe, nullptr, channel_of(send_cqs_.size()), 0);
  if (!recv_cq_) {
    MC_LOG(error) << tl_name() << ": ibv_create_cq (receive) on " << dev_->name() << ": "
                  << std::strerror(errno);
    return Status::IoError;
  }
  MC_ASSIGN_OR_RETURN(tx_pool_, BufPool::create(dev_, config_.seg_size, config_.max_bufs, "rc tx"));
  MC_ASSIGN_OR_RETURN(rx_pool_,
                      BufPool::create(dev_, config_.seg_size, config_.max_cqe_per_ctx, "rc rx"));
  epfd_ = epoll_create1(EPOLL_CLOEXEC);
  if (epfd_ < 0) {
    MC_LOG(error) << tl_name() << ": epoll_create1: " << std::strerror(errno);
    return Status::IoError;
  }
  MC_ASSIGN_OR_RETURN(listen_fd_, oob_listen(&addr_.port));
  addr_.ipv4 = oob_ip;
  for (ibv_comp_channel* ch : channels_) MC_RETURN_IF_ERROR(watch(ch->fd, nullptr));
  return watch(listen_fd_, nullptr);
}

// The completion channels make the event fd; without them the iface is
// polled only (no kCapEventFd).
Status RcIface::open_channels() {
  const VerbsOps& ops = dev_->ops();
  for (uint64_t i = 0; i < config_.num_comp_channels_per_ctx; ++i) {
    ibv_comp_channel* ch = ops.create_comp_channel(dev_->context());
    if (!ch) {
      if (i > 0) {
        MC_LOG(error) << tl_name() << ": completion channel " << i + 1 << " of "
                      << config_.num_comp_channels_per_ctx << " (MC_NUM_COMP_CHANNELS_PER_CTX) on "
                      << dev_->name() << ": " << std::strerror(errno);
        return Status::IoError;
      }
      MC_LOG_ONCE(info) << tl_name() << ": no completion channel on " << dev_->name() << " ("
                        << std::strerror(errno) << "): no event fd";
      return Status::Ok;
    }
    channels_.push_back(ch);
    if (fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK) != 0) {
      MC_LOG(error) << tl_name()
                    << ": fcntl O_NONBLOCK on a completion channel: " << std::strerror(errno);
      return Status::IoError;
    }
  }
  return Status::Ok;
}

RcIface::~RcIface() {
  accepted_.clear();
  const VerbsOps& ops = dev_->ops();
  for (ibv_cq* cq : send_cqs_) ops.destroy_cq(cq);
  if (recv_cq_) ops.destroy_cq(recv_cq_);
  for (ibv_comp_channel* ch : channels_) ops.destroy_comp_channel(ch);
  tx_pool_.reset();
  rx_pool_.reset();
  if (listen_fd_ >= 0) close(listen_fd_);
  if (epfd_ >= 0) close(epfd_);
}

IfaceAttr RcIface::query() const {
  IfaceAttr a;
  const size_t seg = config_.seg_size;
  const size_t max_msg = dev_->port_attr().max_msg_sz ? dev_->port_attr().max_msg_sz : 1u << 30;
  const size_t short_max = std::min(std::max<size_t>(config_.max_inline, 64), seg);
  a.cap = kCapAmShort | kCapAmBcopy | kCapPutShort | kCapPutBcopy | kCapPutZcopy | kCapGetBcopy |
          kCapGetZcopy | kCapPending | kCapConnectToIface | kCapErrHandlePeerFailure;
  if (config_.max_sge > 1) a.cap |= kCapAmZcopy;
  if (!channels_.empty()) a.cap |= kCapEventFd;
  a.put = OpLimits{short_max, seg, 0, max_msg, config_.max_sge, 0};
  a.get = OpLimits{0, seg, 0, max_msg, config_.max_sge, 0};
  a.am = OpLimits{short_max - 1,
                  seg - 1,
                  0,
                  seg - 1,
                  std::max<size_t>(1, config_.max_sge - 1),
                  std::min<size_t>(64, seg / 2)};
  // Verbs adds the provider's call path to every post and poll.
  a.latency = LinearFunc{800e-9 + (dev_->is_roce() ? 500e-9 : 0), 0};
  a.bandwidth = Bandwidth{0, dev_->bandwidth()};
  a.overhead = 75e-9;
  a.priority = 0;
  a.device_addr_len = kDeviceAddrLen;
  a.iface_addr_len = kIfaceAddrLen;
  return a;
}

Result<std::unique_ptr<RcWq>> RcIface::wq_open(ibv_qp* qp) {
  return std::unique_ptr<RcWq>(std::make_unique<VerbsWq>(dev_->ops(), qp));
}

int RcIface::poll_cq(ibv_cq* cq, int n, ibv_wc* wc) {
  return dev_->ops().poll_cq(cq, n, wc);
}

int RcIface::cq_arm(ibv_cq* cq) {
  return dev_->ops().req_notify_cq(cq, 0);
}

Result<int> RcIface::event_fd() {
  if (channels_.empty()) return Status::Unsupported;
  return epfd_;
}

Status RcIface::arm() {
  if (channels_.empty()) return Status::Unsupported;
  if (!failures_.empty() || !pending_.empty()) return Status::Busy;
  std::vector<ibv_cq*> cqs = send_cqs_;
  cqs.push_back(recv_cq_);
  for (ibv_cq* cq : cqs) {
    const int rc = cq_arm(cq);
    if (rc != 0) {
      MC_LOG(error) << tl_name() << ": arming a CQ of " << dev_->name() << ": "
                    << std::strerror(rc);
      return Status::IoError;
    }
  }
  // A completion that came before the arm raises no event: look once more.
  return progress() > 0 ? Status::Busy : Status::Ok;
}

uint16_t RcIface::mtu_bytes() const {
  return static_cast<uint16_t>(ib::mtu_bytes(dev_->path_mtu()));
}

DeviceAddr RcIface::local_device() const {
  DeviceAddr d;
  d.link_layer = dev_->port_attr().link_layer;
  d.lid = dev_->port_attr().lid;
  d.guid = dev_->guid();
  d.gid = dev_->gid();
  return d;
}

std::vector<uint8_t> RcIface::device_address() const {
  return pack(local_device());
}

std::vector<uint8_t> RcIface::iface_address() const {
  return pack(addr_);
}

bool RcIface::is_reachable(std::span<const uint8_t> device_addr,
                           std::span<const uint8_t> iface_addr, std::string* reason) const {
  std::string why;
  Result<DeviceAddr> dev = unpack_device_addr(device_addr, &why);
  Result<IfaceAddr> iface =
      dev.ok() ? unpack_iface_addr(iface_addr, &why) : Result<IfaceAddr>(Status::BadData);
  if (!dev.ok() || !iface.ok()) {
    if (reason) *reason = why;
    return false;
  }
  if (dev->link_layer != dev_->port_attr().link_layer) {
    if (reason) *reason = "link layer differs (InfiniBand vs Ethernet)";
    return false;
  }
  return true;
}

Result<std::unique_ptr<Endpoint>> RcIface::ep_create(std::span<const uint8_t> device_addr,
                                                     std::span<const uint8_t> iface_addr) {
  std::string why;
  if (!is_reachable(device_addr, iface_addr, &why)) {
    MC_LOG(error) << tl_name() << ": cannot connect: " << why;
    return Status::Unreachable;
  }
  MC_ASSIGN_OR_RETURN(std::unique_ptr<RcEp> ep,
                      RcEp::create(this, *unpack_device_addr(device_addr, nullptr),
                                   *unpack_iface_addr(iface_addr, nullptr)));
  return std::unique_ptr<Endpoint>(std::move(ep));
}

Status RcIface::flush(Completion* comp) {
  bool idle = true;
  for (RcEp* ep : eps_) {
    if (ep->idle()) continue;
    idle = false;
    MC_RETURN_IF_ERROR(ep->flush(nullptr));
  }
  if (idle) return Status::Ok;
  if (comp) flush_waiters_.push_back(comp);
  return Status::InProgress;
}

void RcIface::check_flush_waiters() {
  for (RcEp* ep : eps_) ep->check_flushes();
  if (flush_waiters_.empty()) return;
  for (RcEp* ep : eps_) {
    if (!ep->idle()) return;
  }
  std::vector<Completion*> done;
  done.swap(flush_waiters_);
  for (Completion* c : done) completion_update(c, Status::Ok);
}

void RcIface::ep_remove(RcEp* ep) {
  std::erase(eps_, ep);
  std::erase_if(failures_, [ep](const auto& f) { return f.first == ep; });
}

void RcIface::report_failure(RcEp* ep, Status status) {
  failures_.emplace_back(ep, status);
}

void RcIface::report_failures() {
  std::vector<std::pair<RcEp*, Status>> failures;
  failures.swap(failures_);
  for (auto& [ep, status] : failures) {
    if (err_handler_) err_handler_(ep, status);
  }
}

Status RcIface::watch(int fd, void* tag) {
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = fd;
  if (epoll_ctl(epfd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
    MC_LOG(error) << tl_name() << ": epoll_ctl add: " << std::strerror(errno);
    return Status::IoError;
  }
  if (tag) watched_eps_[fd] = static_cast<RcEp*>(tag);
  return Status::Ok;
}

void RcIface::unwatch(int fd) {
  epoll_ctl(epfd_, EPOLL_CTL_DEL, fd, nullptr);
  watched_eps_.erase(fd);
}

}  // namespace mc::uct::ib::rc
