// SPDX-License-Identifier: Apache-2.0
// tcp iface: set-up and tear-down, accepting connections, addresses,
// attributes, progress and flush.
#include "uct/tcp/tcp_iface.h"

#include <arpa/inet.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>

#include "ucs/log/log.h"
#include "ucs/sys/sys.h"
#include "uct/tcp/tcp_socket.h"

namespace mc::uct::tcp {

Result<std::unique_ptr<TcpIface>> TcpIface::create(TcpMd* md, const IfaceParams& params,
                                                   const TcpConfig& config) {
  MC_ASSIGN_OR_RETURN(NetDevice dev, find_device(params.dev_name));
  std::unique_ptr<TcpIface> iface(new TcpIface(md, params, config, std::move(dev)));
  MC_RETURN_IF_ERROR(iface->init(params));
  return iface;
}

TcpIface::TcpIface(TcpMd* md, const IfaceParams& params, const TcpConfig& config, NetDevice dev)
    : Iface(md),
      md_(md),
      config_(config),
      dev_(std::move(dev)),
      link_(link_model(dev_)),
      err_handler_(params.err_handler) {}

Status TcpIface::init(const IfaceParams& params) {
  if (params.connect_timeout) config_.conn_timeout = *params.connect_timeout;
  if (params.async) {
    loop_ = params.async;
  } else {
    MC_ASSIGN_OR_RETURN(own_loop_, ucs::EventLoop::create());
    loop_ = own_loop_.get();
  }
  ucs::MpoolParams pool;
  pool.elem_size = config_.seg_size;
  pool.alignment = 64;
  pool.elems_per_chunk = std::clamp<size_t>((1u << 20) / config_.seg_size, 1, 64);
  bounce_max_ = std::max<size_t>(64, 4 * config_.max_outstanding);
  pool.max_elems = bounce_max_;
  pool.name = "tcp bounce buffers";
  MC_ASSIGN_OR_RETURN(bounce_pool_, ucs::ThreadSafeMpool::create(pool));
  ucs::MpoolParams requests;
  requests.elem_size = sizeof(TcpRequest);
  requests.alignment = alignof(TcpRequest);
  requests.elems_per_chunk = 64;
  requests.name = "tcp requests";
  MC_ASSIGN_OR_RETURN(request_pool_, ucs::Mpool::create(requests));
  event_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (event_fd_ < 0) {
    MC_LOG(error) << "tcp: eventfd() failed: " << ucs::errno_string(errno);
    return Status::IoError;
  }
  MC_ASSIGN_OR_RETURN(const int listen_fd,
                      listen_socket(dev_.ipv4, config_.port_range,
                                    static_cast<int>(config_.listen_backlog), config_, &port_));
  TcpListener::Params lp;
  lp.hello_timeout = config_.accept_timeout;
  lp.max_pending = config_.max_pending_accepts;
  listener_ = std::make_unique<TcpListener>(
      loop_, &lock_, listen_fd, ip_string(dev_.ipv4) + ":" + std::to_string(port_), lp,
      [this](int fd) { return adopt(fd); },
      [this](TcpConn& conn) {
        conn.close_locked(true);
        conn.clear_tx_locked();
        forget_locked(conn);
      });
  MC_RETURN_IF_ERROR(listener_->start());
  if (own_loop_) MC_RETURN_IF_ERROR(own_loop_->start());
  MC_LOG(debug) << "tcp: iface on " << dev_.name << " listens on " << ip_string(dev_.ipv4) << ":"
                << port_;
  return Status::Ok;
}

TcpIface::~TcpIface() {
  // Stop serving: after this no callback of the listener starts.
  if (own_loop_) (void)own_loop_->stop();
  if (listener_) listener_->stop();
  // Endpoints first: the primaries they leave open join conns_.
  for (TcpEp* ep : std::vector<TcpEp*>(eps_.begin(), eps_.end())) ep->detach();
  std::vector<std::shared_ptr<TcpConn>> left;
  {
    std::lock_guard guard(lock_);
    for (auto& [ptr, conn] : conns_) left.push_back(conn);
  }
  for (auto& conn : left) conn->detach();
  loop_barrier();
  {
    std::lock_guard guard(lock_);
    for (auto& conn : left) {
      conn->close_locked();
      conn->clear_tx_locked();  // replies and copies: nothing to give back
    }
    conns_.clear();
  }
  left.clear();
  listener_.reset();  // no callback of it runs: the loop stopped, or the barrier above
  {
    std::lock_guard guard(events_lock_);
    events_.clear();  // only active messages can be left: endpoints took theirs
  }
  if (event_fd_ >= 0) close(event_fd_);
  for (FlushWaiter& w : std::exchange(flush_.waiters, {})) {
    completion_update(w.comp, Status::Canceled);
  }
}

std::shared_ptr<TcpConn> TcpIface::adopt(int fd) {
  apply_socket_options(fd, config_, SocketOptions::AllButBuffers);
  auto conn =
      std::make_shared<TcpConn>(fd, false, &lock_, conn_handler(), loop_, limits(), peer_name(fd));
  conn->tx_backlog_limit = kTargetTxBacklog;
  conn->accepted = true;
  {
    std::lock_guard guard(lock_);
    conns_.emplace(conn.get(), conn);
  }
  if (is_error(conn->attach(conn))) {
    std::lock_guard guard(lock_);
    conns_.erase(conn.get());
    return nullptr;
  }
  MC_LOG(debug) << "tcp: accepted a connection from " << conn->name();
  return conn;
}

uint64_t TcpIface::hello_identity() const {
  return wire::hello_identity(ntohl(dev_.ipv4), port_);
}

std::shared_ptr<TcpConn> TcpIface::find_adoptable_locked(uint64_t peer_id) const {
  for (auto& [ptr, conn] : conns_) {
    if (conn->accepted && conn->shareable && conn->peer_id == peer_id && !conn->owner &&
        !conn->got_bye && !conn->sent_bye && !conn->dead_locked()) {
      return conn;
    }
  }
  return nullptr;
}

void TcpIface::release_primary_locked(const std::shared_ptr<TcpConn>& conn) {
  if (conn->dead_locked()) {
    forget_locked(*conn);
    return;
  }
  if (!conn->sent_bye) {
    wire::FrameHeader bye;
    bye.op = wire::Op::Bye;
    TxFrame frame(bye);
    (void)conn->send_locked(frame);
    conn->sent_bye = true;
  }
  // The peer closes it on our Bye once it has no endpoint there either.
  conns_.emplace(conn.get(), conn);
}

void TcpIface::loop_barrier() {
  if (!loop_ || !loop_->is_running() || loop_->in_loop_thread()) return;
  struct Barrier {
    std::mutex m;
    std::condition_variable cv;
    bool done = false;
  };
  auto b = std::make_shared<Barrier>();
  if (is_error(loop_->post([b] {
        std::lock_guard guard(b->m);
        b->done = true;
        b->cv.notify_all();
      }))) {
    return;
  }
  // Posted functions run after the callbacks of the round in flight. A loop
  // that stops meanwhile drops the function; then nothing runs either.
  std::unique_lock guard(b->m);
  while (!b->cv.wait_for(guard, std::chrono::milliseconds(50), [&] { return b->done; })) {
    if (!loop_->is_running()) return;
  }
}

void TcpIface::push_event(Event ev) {
  std::lock_guard guard(events_lock_);
  events_.items.push_back(std::move(ev));
  events_queued_.store(true, std::memory_order_release);
  if (armed_) {
    armed_ = false;
    const uint64_t one = 1;
    // Nonblocking; EAGAIN only when the counter is full, i.e. readable.
    (void)!write(event_fd_, &one, sizeof(one));
  }
}

Result<int> TcpIface::event_fd() {
  // Driven by progress(): the sockets wake the caller through the loop's fd.
  if (!own_loop_ && !loop_->is_running()) return loop_->fd();
  return event_fd_;
}

Status TcpIface::arm() {
  uint64_t count = 0;
  while (read(event_fd_, &count, sizeof(count)) > 0) {
  }
  std::lock_guard guard(events_lock_);
  if (!events_.empty()) return Status::Busy;
  armed_ = true;
  return Status::Ok;
}

std::vector<TcpIface::Event> TcpIface::take_events(const TcpEp* ep) {
  std::vector<Event> out;
  std::lock_guard guard(events_lock_);
  std::vector<Event>& items = events_.items;
  size_t kept = events_.head;
  for (size_t i = events_.head; i < items.size(); ++i) {
    const Event& e = items[i];
    const bool mine = (e.type == Event::Type::Done && e.req->ep == ep) ||
                      (e.type == Event::Type::EpError && e.ep == ep);
    if (mine) {
      out.push_back(std::move(items[i]));
    } else {
      if (kept != i) items[kept] = std::move(items[i]);
      ++kept;
    }
  }
  items.resize(kept);
  if (events_.empty()) {
    events_.clear();
    events_queued_.store(false, std::memory_order_relaxed);
  }
  return out;
}

TcpIface::Event TcpIface::EventQueue::pop() {
  Event ev = std::move(items[head++]);
  if (head == items.size()) {
    clear();
  } else if (head >= 64 && 2 * head >= items.size()) {
    items.erase(items.begin(), items.begin() + static_cast<std::ptrdiff_t>(head));
    head = 0;
  }
  return ev;
}

IfaceAttr TcpIface::query() const {
  IfaceAttr attr;
  attr.cap = kCapAmShort | kCapAmBcopy | kCapAmZcopy | kCapPutShort | kCapPutBcopy | kCapPutZcopy |
             kCapGetBcopy | kCapGetZcopy | kCapPending | kCapConnectToIface | kCapEventFd |
             kCapErrHandlePeerFailure;
  const size_t seg = config_.seg_size;
  const size_t max_short = std::min(kMaxShort, seg);
  attr.am = OpLimits{max_short, seg, 0, seg, kMaxIov, kMaxAmHeader};
  attr.put = OpLimits{max_short, seg, 0, kMaxZcopy, kMaxIov, 0};
  attr.get = OpLimits{0, seg, 0, kMaxZcopy, kMaxIov, 0};
  attr.latency = LinearFunc{link_.latency, 0};
  attr.bandwidth = Bandwidth{0, link_.bandwidth};
  attr.overhead = 2e-6;  // a system call or two per operation
  attr.priority = 0;
  attr.kernel_loopback = true;
  attr.device_addr_len = wire::kDeviceAddrSize;
  attr.iface_addr_len = wire::kIfaceAddrSize;
  attr.ep_addr_len = 0;
  return attr;
}

unsigned TcpIface::progress() {
  unsigned count = 0;
  // A caller-driven loop that nobody runs on a thread is driven from here;
  // what its callbacks did (a put written, a get served) counts as work.
  // The worker's other tcp ifaces share that loop: when one of them (or
  // anyone) progressed it since this iface did, that wait served this
  // iface's sockets too (their active messages queued below), and a second
  // epoll_wait in the same round would find nothing.
  if (!own_loop_ && !loop_->is_running()) {
    const uint64_t waits = loop_->progress_count();
    if (waits == loop_waits_seen_) {
      direct_am_.store(true, std::memory_order_relaxed);
      Result<size_t> n = loop_->progress(std::chrono::milliseconds(0));
      direct_am_.store(false, std::memory_order_relaxed);
      if (n.ok()) count += static_cast<unsigned>(*n);
      count += static_cast<unsigned>(std::exchange(direct_ams_, 0));
    }
    loop_waits_seen_ = loop_->progress_count();
  }
  size_t budget = 0;
  if (events_queued_.load(std::memory_order_acquire)) {
    std::lock_guard guard(events_lock_);
    budget = events_.size();  // what a handler posts now waits for the next call
  }
  for (; budget > 0; --budget) {
    Event ev;
    {
      std::lock_guard guard(events_lock_);
      if (events_.empty()) break;
      ev = events_.pop();
      if (events_.empty()) events_queued_.store(false, std::memory_order_relaxed);
    }
    switch (ev.type) {
      case Event::Type::Done: ev.req->ep->complete(ev.req); break;
      case Event::Type::Am:
        am_queued_.fetch_sub(1);
        (void)invoke_am(ev.am_id, ev.payload(), ev.length, 0);
        break;
      case Event::Type::EpError: ev.ep->report_error(ev.status); break;
    }
    ++count;
  }
  resume_paused();
  // Pending callbacks must not destroy endpoints (as in UCX).
  for (TcpEp* ep : eps_) count += ep->dispatch_pending();
  return count;
}

void TcpIface::resume_paused() {
  if (!any_paused_.load() || am_queued_.load() > config_.am_queue_len / 2) return;
  std::lock_guard guard(lock_);
  for (auto& weak : std::exchange(paused_, {})) {
    if (auto conn = weak.lock()) conn->resume_locked();
  }
  any_paused_.store(false);
}

std::vector<uint8_t> TcpIface::device_address() const {
  return wire::encode_device_addr({dev_.ipv4, ucs::boot_id_hash(), ucs::host_identity().net_ns});
}

std::vector<uint8_t> TcpIface::iface_address() const {
  return wire::encode_iface_addr(port_);
}

bool TcpIface::is_reachable(std::span<const uint8_t> device_addr,
                            std::span<const uint8_t> iface_addr, std::string* reason) const {
  auto say = [reason](const char* why) {
    if (reason) *reason = why;
    return false;
  };
  auto dev = wire::decode_device_addr(device_addr);
  if (dev.status() == Status::Unsupported) return say("address family mismatch (not IPv4)");
  if (!dev.ok()) return say("malformed tcp device address");
  if (!wire::decode_iface_addr(iface_addr).ok()) return say("malformed tcp iface address");
  const bool peer_loopback = is_loopback(dev->ipv4);
  if (peer_loopback != dev_.loopback) {
    return say("a loopback and a non-loopback address do not reach each other");
  }
  if (peer_loopback &&
      (dev->boot_id != ucs::boot_id_hash() || dev->net_ns != ucs::host_identity().net_ns)) {
    return say("loopback address of another host or network namespace");
  }
  return true;
}

Result<std::unique_ptr<Endpoint>> TcpIface::ep_create(std::span<const uint8_t> device_addr,
                                                      std::span<const uint8_t> iface_addr) {
  std::string reason;
  if (!is_reachable(device_addr, iface_addr, &reason)) {
    MC_LOG(error) << "tcp: cannot connect from " << dev_.name << ": " << reason;
    return Status::Unreachable;
  }
  const wire::DeviceAddr dev = *wire::decode_device_addr(device_addr);
  const uint16_t port = *wire::decode_iface_addr(iface_addr);
  MC_ASSIGN_OR_RETURN(std::unique_ptr<TcpEp> ep, TcpEp::create(this, dev.ipv4, port));
  return std::unique_ptr<Endpoint>(std::move(ep));
}

Status TcpIface::flush(Completion* comp) {
  if (flush_.outstanding.empty()) return Status::Ok;
  if (comp) flush_.waiters.push_back(FlushWaiter{next_seq_, comp, Status::Ok});
  return Status::InProgress;
}

}  // namespace mc::uct::tcp
