// SPDX-License-Identifier: Apache-2.0
// RC iface (rc_verbs, rc_mlx5): send and receive completion queues, registered bounce and
// receive buffers, the out-of-band listener through which peers connect,
// and the queue pairs of connections accepted from peers.
#pragma once

#include <map>
#include <memory>
#include <unordered_map>
#include <vector>

#include "uct/api/iface.h"
#include "uct/base/pending_queue.h"
#include "uct/ib/base/ib_md.h"
#include "uct/ib/rc/rc_config.h"
#include "uct/ib/rc/rc_pool.h"
#include "uct/ib/rc/rc_qp.h"
#include "uct/ib/rc/rc_wire.h"
#include "uct/ib/rc/rc_wq.h"

namespace mc::uct::ib::rc {

class RcEp;

class RcIface : public Iface {
 public:
  static Result<std::unique_ptr<RcIface>> create(IbMd* md, size_t dev_index, const RcConfig& config,
                                                 const IfaceParams& params);
  ~RcIface() override;

  IfaceAttr query() const override;
  unsigned progress() override;
  std::vector<uint8_t> device_address() const override;
  std::vector<uint8_t> iface_address() const override;
  bool is_reachable(std::span<const uint8_t> device_addr, std::span<const uint8_t> iface_addr,
                    std::string* reason) const override;
  Result<std::unique_ptr<Endpoint>> ep_create(std::span<const uint8_t> device_addr,
                                              std::span<const uint8_t> iface_addr) override;
  Status flush(Completion* comp) override;
  /// The iface's epoll fd: its out-of-band sockets and the completion
  /// channel of its CQs. Unsupported where the provider has no channel.
  Result<int> event_fd() override;
  Status arm() override;

  // For queue pairs and endpoints.
  /// "rc_verbs", "rc_mlx5": the transport, for messages.
  const char* tl_name() const { return md_->tl_name(); }
  /// Completion channels opened (MC_NUM_COMP_CHANNELS_PER_CTX; 0: no event fd).
  size_t comp_channels() const { return channels_.size(); }
  /// The work queue through which `qp`'s requests are posted.
  virtual Result<std::unique_ptr<RcWq>> wq_open(ibv_qp* qp);
  IbDevice& dev() const { return *dev_; }
  size_t dev_index() const { return dev_index_; }
  const RcConfig& config() const { return config_; }
  BufPool& tx_pool() { return *tx_pool_; }
  BufPool& rx_pool() { return *rx_pool_; }
  ibv_cq* send_cq(size_t index) const { return send_cqs_[index]; }
  ibv_cq* recv_cq() const { return recv_cq_; }
  size_t& cq_credit(size_t index) { return cq_credits_[index]; }
  /// The send CQ the next queue pair uses (round-robin).
  size_t next_cq_index() { return next_cq_++ % send_cqs_.size(); }
  uint16_t mtu_bytes() const;
  DeviceAddr local_device() const;
  void qp_add(RcQp* qp) { qps_[qp->qpn()] = qp; }
  void qp_remove(RcQp* qp) { qps_.erase(qp->qpn()); }
  PendingQueue& pending() { return pending_; }
  /// Registers `fd` with the iface's poller; events go to `ep` (null: listener).
  Status watch(int fd, void* tag);
  void unwatch(int fd);
  void ep_add(RcEp* ep) { eps_.push_back(ep); }
  void ep_remove(RcEp* ep);
  /// Calls the error handler for `ep` from the next progress().
  void report_failure(RcEp* ep, Status status);

 protected:
  RcIface(IbMd* md, size_t dev_index, const RcConfig& config, const IfaceParams& params);
  /// Creates the CQs, buffer pools and the out-of-band listener.
  Status init(uint32_t oob_ip);
  /// Polls up to `n` completions of `cq` (ibv_poll_cq's contract: the count,
  /// or negative when the CQ overran).
  virtual int poll_cq(ibv_cq* cq, int n, ibv_wc* wc);
  /// Requests an event for the next completion of `cq`. 0 or an errno.
  virtual int cq_arm(ibv_cq* cq);
  /// An event of `cq` was taken from the completion channel.
  virtual void cq_event(ibv_cq*) {}
  const std::vector<ibv_cq*>& send_cqs() const { return send_cqs_; }
  /// The live queue pair numbered `qpn`, or null.
  RcQp* find_qp(uint32_t qpn) const {
    auto it = qps_.find(qpn);
    return it == qps_.end() ? nullptr : it->second;
  }

 private:
  /// A connection a peer's endpoint opened to this iface: its socket
  /// (closed by the peer when the endpoint goes) and the receiving QPs.
  struct Accepted {
    int fd = -1;
    FrameReader reader;
    std::vector<std::unique_ptr<RcQp>> qps;
    size_t rx_posted = 0;
    ~Accepted();
  };
  unsigned poll_send();
  unsigned poll_recv();
  unsigned poll_oob();
  void drain_cq_events(ibv_comp_channel* channel);
  Status open_channels();
  void accept_all();
  void on_accepted_event(Accepted* a);
  Status accept_connect(Accepted* a);
  void drop_accepted(Accepted* a);
  void report_failures();
  void check_flush_waiters();

  IbMd* md_;
  size_t dev_index_;
  IbDevice* dev_;
  RcConfig config_;
  ErrorHandler err_handler_;
  std::vector<ibv_cq*> send_cqs_;
  std::vector<size_t> cq_credits_;
  size_t next_cq_ = 0;
  ibv_cq* recv_cq_ = nullptr;
  // MC_NUM_COMP_CHANNELS_PER_CTX completion channels, the CQs spread over
  // them in turn (send CQs, then the receive CQ); each channel's fd is in
  // epfd_. Empty: no event fd.
  std::vector<ibv_comp_channel*> channels_;
  size_t rx_posted_ = 0;  // receives posted on accepted connections (recv CQ credits)
  std::unique_ptr<BufPool> tx_pool_, rx_pool_;
  int epfd_ = -1;
  int listen_fd_ = -1;
  IfaceAddr addr_;
  std::unordered_map<uint32_t, RcQp*> qps_;            // by QP number
  std::map<int, std::unique_ptr<Accepted>> accepted_;  // by socket
  std::vector<RcEp*> eps_;
  std::unordered_map<int, RcEp*> watched_eps_;  // connection sockets of endpoints
  std::vector<std::pair<RcEp*, Status>> failures_;
  std::vector<Completion*> flush_waiters_;
  PendingQueue pending_;
};

}  // namespace mc::uct::ib::rc
