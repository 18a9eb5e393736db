// SPDX-License-Identifier: Apache-2.0
// Worker: ifaces, address, progress and requests.
#include "ucp/core/worker.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <random>

#include "ucp/core/am_reassembly.h"
#include "ucp/core/endpoint.h"
#include "ucp/core/file_service.h"
#include "ucp/core/request_alloc.h"
#include "ucp/proto/am_wire.h"
#include "ucp/proto/flush_op.h"
#include "ucp/proto/remote_staging.h"
#include "ucp/proto/request_op.h"
#include "ucp/proto/rndv.h"
#include "ucs/log/log.h"
#include "ucs/sys/sys.h"

namespace mc::ucp {

namespace {

uint64_t random_uuid() {
  std::random_device rd;
  const uint64_t r = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  return r ^ ucs::monotonic_ns() ^ (static_cast<uint64_t>(getpid()) << 20);
}

}  // namespace

WorkerImpl::WorkerImpl(Context* context)
    : context_(context),
      uuid_(random_uuid()),
      reassembly_(std::make_unique<AmReassembly>()),
      done_(std::make_unique<Request>(Request::Key{}, this, nullptr, 0, Callback(), UINT64_MAX,
                                      nullptr)),
      remote_staging_(std::make_unique<RemoteStaging>(this)) {
  done_->status_.store(Status::Ok, std::memory_order_relaxed);
}

Result<std::unique_ptr<WorkerImpl>> WorkerImpl::create(Context& context,
                                                       const WorkerParams& params) {
  std::unique_ptr<WorkerImpl> w(new WorkerImpl(&context));
  w->multi_ = params.thread_mode.value_or(context.config().thread_mode) == ThreadMode::Multi;
  if (params.numa_node) {
    w->numa_node_ = *params.numa_node;
  } else if (context.topology() != nullptr && sched_getcpu() >= 0) {
    w->numa_node_ = context.topology()->numa_node_of_cpu(sched_getcpu());
  }
  MC_ASSIGN_OR_RETURN(w->async_, ucs::EventLoop::create());
  if (params.async_mode == AsyncMode::Thread) MC_RETURN_IF_ERROR(w->async_->start());
  MC_RETURN_IF_ERROR(w->open_ifaces());
  MC_RETURN_IF_ERROR(w->init_wait());
  return w;
}

WorkerImpl::~WorkerImpl() {
  // File operations posted complete into their requests' ops: let them end
  // before the requests are cancelled and freed.
  if (files_) files_->drain();
  close_rndv();
  remote_staging_->close();
  if (eps_.size() > reply_eps_.size()) {
    MC_LOG(error) << "ucp: worker destroyed with " << eps_.size() - reply_eps_.size()
                  << " endpoint(s) alive";
  }
  for (const std::shared_ptr<Request>& r : active_) {
    r->cancel();
    if (r->op_) r->op_->orphan();
  }
  active_.clear();
  files_.reset();
  rndv_recvs_.clear();
  remote_staging_.reset();
  reply_eps_.clear();
  memtype_eps_.clear();
  ifaces_.clear();
  if (async_) (void)async_->stop();
  if (epfd_ >= 0) close(epfd_);
  if (wakefd_ >= 0) close(wakefd_);
}

Status WorkerImpl::open_ifaces() {
  const std::vector<ResourceInfo>& resources = context_->resources();
  for (size_t i = 0; i < resources.size(); ++i) {
    const ResourceInfo& r = resources[i];
    const MdEntry& md = context_->mds()[r.md_index];
    wireup::LocalResource local{r.tl.tl_name, r.tl.dev_name,    md.name,   r.tl.dev_type,
                                {},           md.attr.reg_cost, r.enabled, r.reason};
    local.numa_node = context_->numa_node_of(r.tl);
    if (r.enabled) {
      uct::IfaceParams params;
      params.tl_name = r.tl.tl_name;
      params.dev_name = r.tl.dev_name;
      params.async = async_.get();
      params.sources = &context_->sources();
      params.connect_timeout = context_->config().connect_timeout;
      params.err_handler = [this](uct::Endpoint* ep, Status s) { on_uct_error(ep, s); };
      Result<std::unique_ptr<uct::Iface>> iface = md.md->iface_open(params);
      if (iface.ok()) {
        WorkerIface wi{i, std::move(*iface), {}};
        wi.attr = wi.iface->query();
        local.attr = wi.attr;
        set_uct_am_handlers(*wi.iface);
        ifaces_.push_back(std::move(wi));
      } else {
        MC_LOG(warn) << "ucp: cannot open " << r.name() << ": "
                     << ucs::status_string(iface.status());
        local.enabled = false;
        local.disabled_reason =
            std::string("iface did not open: ") + ucs::status_string(iface.status());
      }
    }
    local_.push_back(std::move(local));
  }
  if (ifaces_.empty()) {
    const std::string& problems = context_->filter_problems();
    MC_LOG(error) << "ucp: no transport resource is usable ("
                  << (problems.empty() ? std::string("see MC_TLS and mc_info -d")
                                       : problems + "; see mc_info -d")
                  << ")";
    return Status::NoDevice;
  }
  return Status::Ok;
}

int WorkerImpl::iface_of(size_t resource) const {
  for (size_t k = 0; k < ifaces_.size(); ++k) {
    if (ifaces_[k].resource == resource) return static_cast<int>(k);
  }
  return -1;
}

std::vector<size_t> WorkerImpl::iface_resources() const {
  std::vector<size_t> out;
  for (const WorkerIface& wi : ifaces_) out.push_back(wi.resource);
  return out;
}

std::vector<uint8_t> WorkerImpl::address() const {
  std::unique_lock guard = lock();
  wireup::WorkerAddress a;
  a.uuid = uuid_;
  a.net_identity = ucs::net_identity();
  a.hostname = ucs::host_identity().hostname;
  for (const WorkerIface& wi : ifaces_) {
    const ResourceInfo& r = context_->resources()[wi.resource];
    const MdEntry& md = context_->mds()[r.md_index];
    wireup::AddressEntry e;
    e.component = md.component->name();
    e.md_name = md.md->name();
    e.tl_name = r.tl.tl_name;
    e.dev_name = r.tl.dev_name;
    e.dev_type = r.tl.dev_type;
    e.device_addr = wi.iface->device_address();
    e.iface_addr = wi.iface->iface_address();
    e.summary = wireup::IfaceSummary{wi.attr.cap,      wi.attr.latency.c, wi.attr.bandwidth.total(),
                                     wi.attr.overhead, wi.attr.priority,  wi.attr.access_mem_types};
    a.ifaces.push_back(std::move(e));
  }
  return wireup::address_pack(a);
}

unsigned WorkerImpl::progress() {
  std::unique_lock guard = lock();
  unsigned events = 0;
  // An iface some endpoint has a lane on, or with events in its last
  // kHotCalls calls, is progressed every time; a quiet one no endpoint uses
  // (tcp's epoll_wait, an io_uring) every 128th time, and then at most once
  // per kSweepNs: a busy-polling caller makes 128 calls in a few
  // microseconds, and a system call that often would cost the busy lanes'
  // latency more than their own work.
  constexpr uint32_t kHotCalls = 256;
  constexpr uint64_t kSweepNs = 100'000;
  bool sweep = false;
  if ((++progress_calls_ & 127) == 0) {
    const uint64_t now = ucs::monotonic_ns();
    if (now >= next_sweep_ns_) {
      sweep = true;
      next_sweep_ns_ = now + kSweepNs;
    }
  }
  for (WorkerIface& wi : ifaces_) {
    if (wi.lanes == 0 && wi.quiet_calls >= kHotCalls && !sweep) continue;
    const unsigned n = wi.iface->progress();
    events += n;
    wi.quiet_calls = n > 0 ? 0 : std::min(wi.quiet_calls + 1, kHotCalls);
  }
  if (!reconnecting_.empty()) {
    // By copy: an endpoint whose lanes are all back leaves the list.
    const uint64_t t = ucs::monotonic_ns();
    for (EndpointImpl* ep : std::vector<EndpointImpl*>(reconnecting_))
      events += ep->progress_reconnect(t);
  }
  if (!pending_rts_.empty()) {
    events += static_cast<unsigned>(pending_rts_.size());
    start_rndv_recvs();
  }
  if (!active_.empty()) {
    const uint64_t now = ucs::monotonic_ns();
    // By index: a callback may start requests (appended) or cancel others.
    // A raw pointer is enough: nothing leaves active_ before the erase below.
    for (size_t i = 0; i < active_.size(); ++i) {
      Request* r = active_[i].get();
      const bool was_done = r->completed();
      r->advance(now);
      if (!was_done && r->completed()) ++events;
    }
    active_.erase(std::remove_if(active_.begin(), active_.end(),
                                 [](const std::shared_ptr<Request>& r) { return r->settled(); }),
                  active_.end());
  }
  if (!rndv_recvs_.empty()) reap_rndv_recvs();
  if (!remote_staging_->idle()) events += remote_staging_->progress();
  if (files_) events += files_->progress();
  return events;
}

std::shared_ptr<Request> WorkerImpl::submit(std::unique_ptr<proto::RequestOp> op,
                                            const RequestParams& params, EndpointImpl* ep) {
  std::unique_lock guard = lock();
  const uint64_t now = ucs::monotonic_ns();
  const ucs::config::Duration timeout =
      params.timeout.value_or(context_->config().transfer_timeout);
  uint64_t deadline = UINT64_MAX;
  if (timeout != ucs::config::Duration::max() && timeout.count() >= 0 &&
      static_cast<uint64_t>(timeout.count()) < UINT64_MAX - now) {
    deadline = now + static_cast<uint64_t>(timeout.count());
  }
  std::shared_ptr<Request> r =
      std::allocate_shared<Request>(RequestAllocator<Request>(), Request::Key{}, this, ep,
                                    next_seq_++, params.callback, deadline, std::move(op));
  active_.push_back(r);
  r->advance(now);
  // Done at once with nothing in flight (a zero-copy put into mapped
  // memory): it leaves at once, or a caller that never progresses (it has
  // no need to) would pile every such request up in active_. Only from the
  // back: a callback may have started later requests, and active_ stays in
  // sequence order.
  if (active_.back() == r && r->settled()) active_.pop_back();
  return r;
}

bool WorkerImpl::completed_before(const EndpointImpl* ep, uint64_t seq) const {
  // active_ is in submission order, which is sequence order: the requests
  // from `seq` on need no look.
  for (const std::shared_ptr<Request>& r : active_) {
    if (r->seq_ >= seq) break;
    if ((!ep || r->ep_ == ep) && !r->completed()) return false;
  }
  return true;
}

Result<std::shared_ptr<Request>> WorkerImpl::flush(const RequestParams& params) {
  std::unique_lock guard = lock();
  std::vector<proto::FlushTarget> targets;
  for (WorkerIface& wi : ifaces_) {
    uct::Iface* iface = wi.iface.get();
    targets.push_back([iface](uct::Completion* comp) { return iface->flush(comp); });
  }
  const uint64_t seq = next_seq_;
  auto op = std::make_unique<proto::FlushOp>([this, seq] { return completed_before(nullptr, seq); },
                                             std::move(targets), std::function<bool(size_t)>(),
                                             losses_.take());
  return submit(std::move(op), params);
}

void WorkerImpl::set_am_handler(uint16_t id, AmCallback callback) {
  std::unique_lock guard = lock();
  if (callback) {
    am_handlers_[id] = std::move(callback);
  } else {
    am_handlers_.erase(id);
  }
}

void WorkerImpl::set_uct_am_handlers(uct::Iface& iface) {
  (void)iface.set_am_handler(proto::kAmIdSingle, [this](const void* data, size_t length, unsigned) {
    on_am_single(data, length);
    return Status::Ok;
  });
  (void)iface.set_am_handler(proto::kAmIdFrag, [this](const void* data, size_t length, unsigned) {
    on_am_frag(data, length);
    return Status::Ok;
  });
  (void)iface.set_am_handler(proto::kAmIdRts, [this](const void* data, size_t length, unsigned) {
    on_am_rts(data, length);
    return Status::Ok;
  });
  (void)iface.set_am_handler(proto::kAmIdAts, [this](const void* data, size_t length, unsigned) {
    on_am_ats(data, length);
    return Status::Ok;
  });
  (void)iface.set_am_handler(proto::kAmIdStagingRequest,
                             [this](const void* data, size_t length, unsigned) {
                               remote_staging_->on_request(data, length);
                               return Status::Ok;
                             });
  (void)iface.set_am_handler(proto::kAmIdStagingDone,
                             [this](const void* data, size_t length, unsigned) {
                               remote_staging_->on_done(data, length);
                               return Status::Ok;
                             });
}

void WorkerImpl::on_am_single(const void* data, size_t length) {
  if (length < proto::kAmSingleHeader) {
    MC_LOG(error) << "ucp: dropped an active message of " << length << " bytes: no header";
    return;
  }
  const auto* p = static_cast<const uint8_t*>(data);
  const uint16_t id = static_cast<uint16_t>(p[0] | (p[1] << 8));
  deliver(id, p + proto::kAmSingleHeader, length - proto::kAmSingleHeader);
}

void WorkerImpl::on_am_frag(const void* data, size_t length) {
  (void)reassembly_->on_fragment(
      data, length, [this](uint16_t id, const void* d, size_t n) { deliver(id, d, n); });
}

void WorkerImpl::deliver(uint16_t id, const void* data, size_t length) {
  auto it = am_handlers_.find(id);
  if (it == am_handlers_.end()) {
    MC_LOG(warn) << "ucp: dropped an active message for id " << id << " (" << length
                 << " bytes): no handler is set";
    return;
  }
  it->second(data, length);
}

void WorkerImpl::on_uct_error(uct::Endpoint* ep, Status status) {
  auto it = uct_eps_.find(ep);
  if (it == uct_eps_.end()) return;
  it->second.first->on_lane_error(it->second.second, status);
}

void WorkerImpl::watch_reconnect(EndpointImpl* ep) {
  if (std::find(reconnecting_.begin(), reconnecting_.end(), ep) == reconnecting_.end()) {
    reconnecting_.push_back(ep);
  }
}

void WorkerImpl::cancel_requests(const EndpointImpl* ep) {
  // By index: a cancelled request's callback may start another.
  for (size_t i = 0; i < active_.size(); ++i) {
    std::shared_ptr<Request> r = active_[i];
    if (r->ep_ == ep) r->cancel();
  }
}

void WorkerImpl::detach(EndpointImpl* ep) {
  for (const std::shared_ptr<Request>& r : active_) {
    if (r->ep_ != ep) continue;
    if (r->op_) r->op_->orphan();
    r->ep_ = nullptr;
  }
  eps_.erase(std::remove(eps_.begin(), eps_.end(), ep), eps_.end());
  std::erase(reconnecting_, ep);
  for (auto it = uct_eps_.begin(); it != uct_eps_.end();) {
    it = it->second.first == ep ? uct_eps_.erase(it) : std::next(it);
  }
}

// Worker: the application's view, each method WorkerImpl's.

Result<std::unique_ptr<Worker>> Worker::create(Context& context) {
  return create(context, WorkerParams{});
}

Result<std::unique_ptr<Worker>> Worker::create(Context& context, const WorkerParams& params) {
  MC_ASSIGN_OR_RETURN(std::unique_ptr<WorkerImpl> w, WorkerImpl::create(context, params));
  return std::unique_ptr<Worker>(std::move(w));
}

Worker::~Worker() = default;
Context& Worker::context() const {
  return impl(*this).context();
}
uint64_t Worker::uuid() const {
  return impl(*this).uuid();
}
std::vector<uint8_t> Worker::address() const {
  return impl(*this).address();
}
unsigned Worker::progress() {
  return impl(*this).progress();
}
int Worker::numa_node() const {
  return impl(*this).numa_node();
}
ThreadMode Worker::thread_mode() const {
  return impl(*this).thread_mode();
}
int Worker::event_fd() const {
  return impl(*this).event_fd();
}
bool Worker::event_driven() const {
  return impl(*this).event_driven();
}
Status Worker::arm() {
  return impl(*this).arm();
}
Status Worker::wait(ucs::config::Duration timeout) {
  return impl(*this).wait(timeout);
}
void Worker::woken() {
  impl(*this).woken();
}

void Worker::signal() {
  impl(*this).signal();
}
std::unique_lock<std::recursive_mutex> Worker::lock() const {
  return impl(*this).lock();
}

void Worker::set_am_handler(uint16_t id, AmCallback callback) {
  impl(*this).set_am_handler(id, std::move(callback));
}

Result<std::unique_ptr<Endpoint>> Worker::ep_create(std::span<const uint8_t> address) {
  MC_ASSIGN_OR_RETURN(std::unique_ptr<EndpointImpl> ep, impl(*this).ep_create(address));
  return std::unique_ptr<Endpoint>(std::move(ep));
}

Result<std::shared_ptr<Request>> Worker::flush(const RequestParams& params) {
  return impl(*this).flush(params);
}

uct::MemType Worker::detect_mem_type(const void* buffer, size_t length) const {
  return impl(*this).detect_mem_type(buffer, length);
}

std::vector<size_t> Worker::iface_resources() const {
  return impl(*this).iface_resources();
}

}  // namespace mc::ucp
