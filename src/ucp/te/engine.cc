// SPDX-License-Identifier: Apache-2.0
// TransferEngine::Impl: init, memory registration, publication of this
// engine's segment, and opening remote segments (see engine.h).
#include "ucp/te/engine.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <random>

#include "ucp/metadata/config.h"
#include "ucp/te/handshake.h"
#include "ucp/te/location.h"
#include "ucp/te/test_hooks.h"
#include "ucs/log/log.h"
#include "ucs/sys/sys.h"

namespace mc {

namespace {

std::string hex(const void* p) {
  char buf[32];
  snprintf(buf, sizeof(buf), "%p", p);
  return buf;
}

// The address peers reach `host` at: the host itself when it is an IPv4 or
// IPv6 address, else its first IPv4 address, else its first IPv6 one; empty
// when it resolves to none.
std::string resolve_ip(const std::string& host) {
  in_addr a{};
  in6_addr a6{};
  if (::inet_pton(AF_INET, host.c_str(), &a) == 1 ||
      ::inet_pton(AF_INET6, host.c_str(), &a6) == 1) {
    return host;
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (::getaddrinfo(host.c_str(), nullptr, &hints, &res) != 0 || res == nullptr) return "";
  const addrinfo* pick = res;
  for (const addrinfo* ai = res; ai != nullptr; ai = ai->ai_next) {
    if (ai->ai_family == AF_INET) {
      pick = ai;
      break;
    }
  }
  char text[INET6_ADDRSTRLEN] = {};
  if (pick->ai_family == AF_INET) {
    ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(pick->ai_addr)->sin_addr, text,
                sizeof(text));
  } else if (pick->ai_family == AF_INET6) {
    ::inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(pick->ai_addr)->sin6_addr, text,
                sizeof(text));
  }
  ::freeaddrinfo(res);
  return text;
}

// set_test_components(): test doubles for the engines' UCP contexts.
std::vector<uct::Component*>& test_components() {
  static std::vector<uct::Component*> components;
  return components;
}

}  // namespace

void te::set_test_components(std::vector<uct::Component*> components) {
  test_components() = std::move(components);
}

TransferEngine::Impl::~Impl() {
  shutdown();
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

Status TransferEngine::Impl::parse_server_name(const std::string& name) {
  std::string host = name;
  in6_addr v6{};
  if (::inet_pton(AF_INET6, name.c_str(), &v6) == 1) {
    // A bare IPv6 address: no port ("[v6]:port" carries one).
  } else if (Result<std::pair<std::string, uint16_t>> hp = te::split_host_port(name); hp.ok()) {
    host = hp->first;
    requested_port_ = hp->second;
  } else if (name.find(':') != std::string::npos) {
    MC_LOG(error) << "transfer engine: local_server_name '" << name
                  << "' is not host, host:port or [IPv6]:port with a port in 1-65535";
    return Status::InvalidParam;
  }
  if (host.empty()) {
    MC_LOG(error) << "transfer engine: local_server_name is empty";
    return Status::InvalidParam;
  }
  host_ = host;
  ip_ = resolve_ip(host);
  if (ip_.empty()) {
    MC_LOG(warn) << "transfer engine: cannot resolve '" << host
                 << "' to an IPv4 or IPv6 address; peers are told 127.0.0.1";
    ip_ = "127.0.0.1";
  }
  return Status::Ok;
}

namespace {

// What MC_INTRA_NVLINK and MC_FORCE_MNNVL need to know of `context`.
te::NvlinkFacts nvlink_facts(const ucp::Context& context) {
  te::NvlinkFacts f;
  const std::string kFabric = "fabric handles (MNNVL): ";
  for (const ucp::ResourceInfo& r : context.resources()) {
    if (r.tl.tl_name != "cuda_ipc") continue;
    if (!r.enabled) {
      f.cuda_ipc_why = r.reason;
      continue;
    }
    f.cuda_ipc_usable = true;
    for (const std::string& note : context.mds()[r.md_index].attr.notes) {
      if (note.rfind(kFabric, 0) != 0) continue;
      const std::string state = note.substr(kFabric.size());
      f.fabric_why = state.rfind("unavailable: ", 0) == 0 ? state.substr(13) : "";
    }
  }
  if (!f.cuda_ipc_usable && f.cuda_ipc_why.empty()) {
    f.cuda_ipc_why = context.component_unavailable_reason("cuda_ipc")
                         .value_or(
                             "libmc_uct_cuda_ipc.so is not loaded (built unless configure "
                             "is given --without-cuda; mc_info -m says why)");
    if (f.cuda_ipc_why.empty()) f.cuda_ipc_why = "its memory domain did not open";
  }
  return f;
}

}  // namespace

Status TransferEngine::Impl::start_ucp() {
  ucs::config::Registry& registry = ucs::config::Registry::instance();
  te::register_te_config_tables(registry);
  metadata::register_metadata_config_tables(registry);
  MC_ASSIGN_OR_RETURN(ucs::config::Sources sources, ucs::config::Sources::from_process());
  for (const auto& [name, value] : config_overrides_) sources.set(name, value, "this engine");
  MC_ASSIGN_OR_RETURN(config_,
                      ucs::config::read_table<te::TeConfig>(te::te_config_table(), sources));
  if (const std::string why = te::unsupported_knobs(config_); !why.empty()) {
    MC_LOG(error) << "transfer engine: " << why;
    return Status::Unsupported;
  }
  if (const std::string note = te::workers_note(config_); !note.empty()) {
    MC_LOG(info) << "transfer engine: " << note;
  }
  // Multi-node NVLink: cuda_ipc exports GPU memory as fabric handles only.
  if (config_.force_mnnvl) sources.set("MC_CUDA_IPC_FABRIC", "y", "MC_FORCE_MNNVL=y");
  MC_ASSIGN_OR_RETURN(ucp::ContextConfig ucp_config, ucs::config::read_table<ucp::ContextConfig>(
                                                         ucp::context_config_table(), sources));
  load_topology(sources, &ucp_config);
  ucp::ContextParams context_params;
  context_params.sources = &sources;
  context_params.config = ucp_config;
  context_params.components = test_components();
  MC_ASSIGN_OR_RETURN(context_, ucp::Context::create(context_params));
  if (const std::string why = te::nvlink_check(config_, nvlink_facts(*context_)); !why.empty()) {
    MC_LOG(error) << "transfer engine: " << why;
    return Status::Unsupported;
  }
  ucp::WorkerParams worker_params;
  worker_params.async_mode = config_.async_mode;
  MC_ASSIGN_OR_RETURN(worker_, ucp::Worker::create(*context_, worker_params));
  if (wake_fd_ < 0) wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd_ < 0) {
    MC_LOG(error) << "transfer engine: eventfd() failed: " << ucs::errno_string(errno);
    return Status::IoError;
  }
  retry_cnt_ = context_->config().retry_cnt;
  const auto timeout = context_->config().transfer_timeout;
  transfer_timeout_ns_ =
      timeout == ucs::config::Duration::max() ? UINT64_MAX : static_cast<uint64_t>(timeout.count());
  for (size_t resource : worker_->iface_resources()) {
    const ucp::ResourceInfo& r = context_->resources()[resource];
    devices_.push_back({r.tl.tl_name + ":" + r.tl.dev_name});
  }
  endpoints_ =
      std::make_unique<te::EndpointStore>(config_.endpoint_store_type, config_.max_ep_per_ctx);
  return Status::Ok;
}

int TransferEngine::Impl::init(const std::string& conn, const std::string& local_server_name) {
  if (initialized_.exchange(true)) {
    MC_LOG(error) << "transfer engine: init called twice";
    return -1;
  }
  server_name_ = local_server_name;
  const Status s = parse_server_name(local_server_name);
  if (s != Status::Ok) {
    shutdown();
    return static_cast<int>(s);
  }
  return init_started(conn);
}

int TransferEngine::Impl::init_at(const std::string& conn, const std::string& local_server_name,
                                  const std::string& host, uint16_t port) {
  if (initialized_.exchange(true)) {
    MC_LOG(error) << "transfer engine: init called twice";
    return -1;
  }
  if (local_server_name.empty()) {
    MC_LOG(error) << "transfer engine: local_server_name is empty";
    shutdown();
    return static_cast<int>(Status::InvalidParam);
  }
  server_name_ = local_server_name;
  // The host alone (an "ip:port" name keeps its port unless `port` is set).
  const Status s = parse_server_name(host.empty() ? local_server_name : host);
  if (s != Status::Ok) {
    shutdown();
    return static_cast<int>(s);
  }
  if (port != 0) requested_port_ = port;
  return init_started(conn);
}

int TransferEngine::Impl::set_config(const std::string& name, const std::string& value) {
  if (initialized_) {
    MC_LOG(error) << "transfer engine: " << name << " set after init; it is read by init";
    return static_cast<int>(Status::Busy);
  }
  if (name.rfind("MC_", 0) != 0) {
    MC_LOG(error) << "transfer engine: '" << name << "' is not a knob (MC_...)";
    return static_cast<int>(Status::InvalidParam);
  }
  config_overrides_[name] = value;
  return 0;
}

std::vector<std::string> TransferEngine::Impl::transports() const {
  std::vector<std::string> out;
  if (!initialized_ || !context_ || !worker_) return out;
  for (size_t resource : worker_->iface_resources()) {
    const std::string& tl = context_->resources()[resource].tl.tl_name;
    if (std::find(out.begin(), out.end(), tl) == out.end()) out.push_back(tl);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// init and init_at, once server_name_ and the host are set.
int TransferEngine::Impl::init_started(const std::string& conn) {
  conn_ = conn;
  std::random_device rd;
  generation_ = (static_cast<uint64_t>(rd()) << 32) | rd();
  Status s = start_ucp();
  if (s == Status::Ok && !metadata::is_p2p(conn)) {
    std::string error;
    Result<metadata::MetadataConfig> mconfig = metadata::read_metadata_config(&error);
    if (!mconfig.ok()) {
      shutdown();
      return static_cast<int>(mconfig.status());
    }
    key_prefix_ = mconfig->key_prefix;
    if (mconfig->refresh_interval != ucs::config::Duration::max()) {
      refresh_interval_ =
          std::chrono::duration_cast<std::chrono::milliseconds>(mconfig->refresh_interval);
    }
    Result<std::unique_ptr<metadata::Store>> store =
        metadata::open_store(conn, metadata::store_options(*mconfig), &error);
    if (store.ok()) {
      store_ = std::move(*store);
    } else {
      MC_LOG(error) << "transfer engine: metadata '" << conn << "': " << error;
      s = store.status();
    }
  }
  if (s == Status::Ok) s = start_notifier();
  if (s == Status::Ok) {
    te::RpcServer::Params params;
    params.port = requested_port_;
    params.min_port = static_cast<uint16_t>(config_.min_rpc_port);
    params.max_port = static_cast<uint16_t>(config_.max_rpc_port);
    params.max_length = config_.handshake_max_length;
    params.io_timeout = config_.handshake_timeout;
    if (!config_.rpc_bind_addr.empty()) params.bind_ip = config_.rpc_bind_addr;
    params.auth_token = config_.auth_token;
    params.max_pending = config_.rpc_max_pending;
    params.max_pending_per_peer = config_.rpc_max_pending_per_peer;
    params.backlog = static_cast<int>(config_.handshake_listen_backlog);
    Result<std::unique_ptr<te::RpcServer>> rpc = te::RpcServer::start(
        params,
        [this](const std::string& name, std::string* error) { return describe(name, error); },
        [n = notifier_.get()](uint16_t code, std::string_view body, const std::string& peer) {
          return n->on_request(code, body, peer);
        });
    if (rpc.ok()) rpc_ = std::move(*rpc);
    s = rpc.status();
  }
  if (s != Status::Ok) {
    shutdown();
    return static_cast<int>(s);
  }
  segment_name_ = store_ ? server_name_ : ip_port();
  notifier_->set_self(segment_name_);
  progress_thread_ = std::thread([this] { progress_loop(); });
  if (store_) {
    s = claim_keys();
    if (s != Status::Ok) {
      if (s != Status::Exists) {
        MC_LOG(error) << "transfer engine: cannot publish to " << store_->url() << ": "
                      << store_->last_error();
      }
      shutdown();
      return static_cast<int>(s);
    }
    start_refresher();
  }
  MC_LOG(info) << "transfer engine: segment '" << segment_name_ << "' served at " << ip_port()
               << " (metadata " << (store_ ? store_->url() : "P2PHANDSHAKE") << ", "
               << devices_.size() << " transports)";
  return 0;
}

void TransferEngine::Impl::shutdown() {
  stop_refresher();  // before the keys are removed: it would put them again
  if (progress_thread_.joinable()) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    wake_progress();
    warmup_cv_.notify_all();
    progress_thread_.join();
  }
  {
    // File tasks in flight complete into their tasks: let them end before
    // the batches go.
    std::unique_lock<std::mutex> lock(mu_);
    if (worker_) drain_file_ops_locked(lock);
  }
  rpc_.reset();
  notifier_.reset();  // after the listener that hands it requests, before the store
  if (store_) {
    remove_own_keys();
    store_.reset();
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (endpoints_) {
    // Destroying an endpoint cancels its requests; their callbacks end the
    // tasks (FAILED), which are still alive here. Tasks hold no endpoint.
    for (auto& [id, batch] : batches_) {
      for (auto& task : batch->tasks) task->entry.reset();
    }
    endpoints_->retire_all();
    for (const auto& e : endpoints_->retired()) e->inflight = 0;
    endpoints_->reap();
  }
  pending_.clear();
  batches_.clear();
  segments_.clear();  // file segments' files before the worker
  buffers_.clear();
  worker_.reset();
  context_.reset();
}

metadata::SegmentDesc TransferEngine::Impl::local_desc_locked() const {
  metadata::SegmentDesc d;
  d.server_name = server_name_;
  d.protocol = "ucp";
  d.devices = devices_;
  d.priority_matrix = priority_matrix_;
  for (const auto& [addr, buf] : buffers_) {
    if (!buf->remote_accessible) continue;
    d.buffers.push_back({buf->location, addr, buf->length, buf->rkey});
  }
  d.worker_address = worker_->address();
  d.generation = generation_;
  return d;
}

// Under P2PHANDSHAKE a segment is named by where its listener is: any
// host:port whose port is this listener's reached it by that name (a host
// name, another address of this machine, IPv4 or IPv6).
bool TransferEngine::Impl::p2p_alias(const std::string& name) const {
  if (store_ || !rpc_) return false;
  Result<std::pair<std::string, uint16_t>> hp = te::split_host_port(name);
  return hp.ok() && hp->second == rpc_->port();
}

Result<std::string> TransferEngine::Impl::describe(const std::string& name, std::string* error) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!worker_) {
    *error = "engine is shutting down";
    return Status::Unreachable;
  }
  if (!name.empty() && name != segment_name_ && name != server_name_ && name != ip_port() &&
      !p2p_alias(name)) {
    *error = "no segment '" + name + "' here (this is '" + segment_name_ + "')";
    return Status::NoElem;
  }
  return metadata::encode(local_desc_locked());
}

Status TransferEngine::Impl::publish() {
  if (!store_) return Status::Ok;  // P2P: peers ask the listener
  std::lock_guard<std::mutex> publish_lock(publish_mu_);
  std::string json;
  {
    std::lock_guard<std::mutex> lock(mu_);
    json = metadata::encode(local_desc_locked());
  }
  const Status s = keep_key_locked(metadata::ram_key(key_prefix_, segment_name_), json, nullptr);
  if (s == Status::Exists) {
    MC_LOG(error) << "transfer engine: cannot publish segment '" << segment_name_
                  << "': the name is another engine's now (see above)";
  } else if (s != Status::Ok) {
    MC_LOG(error) << "transfer engine: cannot publish segment '" << segment_name_ << "' to "
                  << store_->url() << ": " << store_->last_error();
  }
  return s;
}

int TransferEngine::Impl::register_memory(const std::vector<BufferEntry>& entries,
                                          const std::string& location, bool remote_accessible) {
  if (!initialized_ || !worker_) {
    MC_LOG(error) << "transfer engine: registerLocalMemory before init";
    return -1;
  }
  if (!te::location_valid(location)) {
    MC_LOG(error) << "transfer engine: location '" << location << "' is not cpu:N, cuda:N or *";
    return static_cast<int>(Status::InvalidParam);
  }
  std::vector<void*> added;
  int rc = 0;
  for (const BufferEntry& e : entries) {
    auto buf = std::make_unique<LocalBuffer>();
    buf->addr = e.addr;
    buf->length = e.length;
    buf->remote_accessible = remote_accessible;
    buf->location = location;
    if (location == "*" && worker_->detect_mem_type(e.addr, e.length) != uct::MemType::Host) {
      // GPU memory (a memory domain such as cuda_copy's recognises it); its
      // device number is not told through UCP: the first device's NICs.
      buf->location = "cuda:0";
    } else if (location == "*") {
      std::string why;
      Result<std::string> loc = te::detect_location(e.addr, e.length, &why);
      if (!loc.ok()) {
        MC_LOG(warn) << "transfer engine: cannot detect the location of " << hex(e.addr) << ": "
                     << why << "; using cpu:0";
      }
      buf->location = loc.value_or("cpu:0");
    }
    std::lock_guard<std::mutex> lock(mu_);
    const uintptr_t a = reinterpret_cast<uintptr_t>(e.addr);
    auto next = buffers_.lower_bound(a);
    const bool overlaps =
        (next != buffers_.end() && next->first < a + e.length) ||
        (next != buffers_.begin() && std::prev(next)->first + std::prev(next)->second->length > a);
    if (e.addr == nullptr || e.length == 0 || overlaps) {
      MC_LOG(error) << "transfer engine: cannot register " << hex(e.addr) << " (" << e.length
                    << " bytes): " << (overlaps ? "overlaps a registered buffer" : "empty range");
      rc = static_cast<int>(overlaps ? Status::Exists : Status::InvalidParam);
      break;
    }
    const unsigned access = remote_accessible ? uct::kAccessAll : uct::kAccessLocal;
    // GPU memory is registered only where an md takes it (cuda_copy, ib by
    // dma-buf); peers whose lanes reach none have UCP stage it here.
    const uct::MemType mem =
        te::location_is_gpu(buf->location) ? uct::MemType::Cuda : uct::MemType::Unknown;
    Result<std::unique_ptr<ucp::MemHandle>> memh =
        ucp::MemHandle::map(*context_, e.addr, e.length, access, mem);
    if (!memh.ok()) {
      MC_LOG(error) << "transfer engine: cannot register " << hex(e.addr) << ": " << memh.status();
      rc = static_cast<int>(memh.status());
      break;
    }
    buf->memh = std::move(*memh);
    if (remote_accessible) {
      Result<std::vector<uint8_t>> rkey = buf->memh->rkey_pack();
      if (!rkey.ok()) {
        MC_LOG(error) << "transfer engine: cannot pack the rkey of " << hex(e.addr) << ": "
                      << rkey.status();
        rc = static_cast<int>(rkey.status());
        break;
      }
      buf->rkey = std::move(*rkey);
    }
    log_location_choice(*buf);
    buffers_[a] = std::move(buf);
    added.push_back(e.addr);
  }
  if (!added.empty() && remote_accessible && publish() != Status::Ok) {
    // Not published: peers could not use them; undo so the state is one.
    std::lock_guard<std::mutex> lock(mu_);
    for (void* a : added) buffers_.erase(reinterpret_cast<uintptr_t>(a));
    rc = -1;
  }
  return rc;
}

int TransferEngine::Impl::unregister_memory(const std::vector<void*>& addrs) {
  if (!initialized_ || !worker_) return -1;
  int rc = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (void* addr : addrs) {
      auto it = buffers_.find(reinterpret_cast<uintptr_t>(addr));
      if (it == buffers_.end()) {
        MC_LOG(error) << "transfer engine: unregisterLocalMemory: " << hex(addr)
                      << " is not the start of a registered buffer";
        rc = static_cast<int>(Status::NoElem);
        break;
      }
      if (it->second->inflight != 0) {
        MC_LOG(error) << "transfer engine: unregisterLocalMemory: " << hex(addr) << " has "
                      << it->second->inflight << " transfers in flight";
        rc = static_cast<int>(Status::Busy);
        break;
      }
      buffers_.erase(it);
    }
  }
  if (publish() != Status::Ok && rc == 0) rc = -1;
  return rc;
}

// A RAM segment's descriptor. With a store, when there is no ram/<name> but
// an nvmeof/<name>, `*file_json` gets that value and the result is NoElem.
Result<metadata::SegmentDesc> TransferEngine::Impl::fetch_segment(const std::string& name,
                                                                  std::string* file_json) {
  std::string error;
  std::string json;
  if (!store_) {
    Result<std::pair<std::string, uint16_t>> hp = te::split_host_port(name);
    if (!hp.ok()) {
      MC_LOG(error) << "transfer engine: P2PHANDSHAKE segment name '" << name << "' is not ip:port";
      return Status::InvalidParam;
    }
    Result<std::string> got =
        te::handshake_get_segment(hp->first, hp->second, name, config_.handshake_max_length,
                                  config_.handshake_timeout, &error, config_.auth_token);
    if (!got.ok()) {
      MC_LOG(error) << "transfer engine: openSegment('" << name << "'): " << error;
      return got.status();
    }
    json = std::move(*got);
  } else {
    Result<std::string> got = store_->get(metadata::ram_key(key_prefix_, name));
    if (got.status() == Status::NoElem) {
      // No RAM segment of that name: a file segment, if one is registered.
      Result<std::string> file = store_->get(metadata::nvmeof_key(key_prefix_, name));
      if (file.ok()) {
        *file_json = std::move(*file);
        return Status::NoElem;
      }
      if (file.status() != Status::NoElem) got = file.status();
    }
    if (!got.ok()) {
      MC_LOG(error) << "transfer engine: openSegment('" << name << "'): "
                    << (got.status() == Status::NoElem
                            ? "no such segment in " + store_->url() + " (neither " +
                                  metadata::ram_key(key_prefix_, name) + " nor " +
                                  metadata::nvmeof_key(key_prefix_, name) + ")"
                            : store_->last_error());
      return got.status();
    }
    json = std::move(*got);
  }
  Result<metadata::SegmentDesc> desc = metadata::decode_segment(json, &error);
  if (!desc.ok()) {
    MC_LOG(error) << "transfer engine: openSegment('" << name << "'): bad descriptor: " << error;
  }
  if (desc.ok() && store_) return checked_with_owner(name, *desc);
  return desc;
}

// A descriptor from the store is used only as its owner serves it: the
// engine its rpc_meta key names must answer for the name (the handshake, as
// under P2PHANDSHAKE). An owner that answers with another generation than
// the store's descriptor restarted since, or the descriptor was another
// engine's: its own answer, the fresher, is used. An owner that does not
// answer (gone, its lease not yet expired) makes the descriptor stale: the
// open fails, naming the owner's address.
Result<metadata::SegmentDesc> TransferEngine::Impl::checked_with_owner(
    const std::string& name, const metadata::SegmentDesc& stored) {
  const std::string rpc_key = metadata::rpc_meta_key(key_prefix_, name);
  auto refuse = [&](Status status, const std::string& why) {
    MC_LOG(error) << "transfer engine: openSegment('" << name << "'): " << why
                  << "; its descriptor in " << store_->url() << " is not used";
    return status;
  };
  Result<std::string> rpc = store_->get(rpc_key);
  if (rpc.status() == Status::NoElem) {
    return refuse(Status::Unreachable, rpc_key + " is absent: no live engine owns the name");
  }
  if (!rpc.ok()) return refuse(rpc.status(), store_->last_error());
  std::string error;
  Result<metadata::RpcMeta> meta = metadata::decode_rpc_meta(*rpc, &error);
  if (!meta.ok()) return refuse(Status::BadData, rpc_key + ": " + error);
  const std::string owner = meta->ip_or_host_name + ":" + std::to_string(meta->rpc_port);
  Result<std::string> answer = te::handshake_get_segment(
      meta->ip_or_host_name, meta->rpc_port, name, config_.handshake_max_length,
      config_.handshake_timeout, &error, config_.auth_token);
  if (!answer.ok()) {
    return refuse(answer.status(),
                  "its owner at " + owner + " (" + rpc_key + ") does not serve it: " + error);
  }
  Result<metadata::SegmentDesc> live = metadata::decode_segment(*answer, &error);
  if (!live.ok()) return refuse(Status::BadData, "the answer of " + owner + ": " + error);
  if (live->generation != stored.generation) {
    MC_LOG(warn) << "transfer engine: openSegment('" << name << "'): the descriptor in "
                 << store_->url() << " (generation " << stored.generation
                 << ") is not the one its owner at " << owner << " serves (generation "
                 << live->generation << "): stale or another engine's; the owner's is used";
  }
  return live;
}

SegmentHandle TransferEngine::Impl::open_segment(const std::string& name) {
  if (!initialized_ || !worker_) return -1;
  std::lock_guard<std::mutex> open_lock(open_mu_);
  SegmentID known = -1;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [id, seg] : segments_) {
      if (seg->name == name) known = id;
    }
  }
  std::string file_json;
  Result<metadata::SegmentDesc> desc = fetch_segment(name, &file_json);
  if (!file_json.empty()) {
    {
      // Open already (as a file segment, or a RAM segment whose owner has
      // gone): the same handle, with what it was opened with.
      std::lock_guard<std::mutex> lock(mu_);
      if (known >= 0 && segments_.count(known) != 0) return known;
    }
    Result<std::unique_ptr<RemoteSegment>> seg = make_file_segment(name, file_json);
    if (!seg.ok()) return static_cast<SegmentHandle>(seg.status());
    std::lock_guard<std::mutex> lock(mu_);
    const SegmentID id = next_segment_++;
    MC_LOG(debug) << "transfer engine: file segment '" << name << "' opened as " << id << " with "
                  << (*seg)->files.size() << " files";
    segments_[id] = std::move(*seg);
    return id;
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (known >= 0 && segments_.count(known) != 0) {
    // Open already: the same handle, with the owner's current descriptor
    // (buffers registered since, or a restarted owner) when no task of it
    // is unfinished; tasks index into the descriptor they were checked by.
    RemoteSegment& seg = *segments_[known];
    if (seg.file) {
      // Open as a file segment: a RAM segment of that name published since
      // does not replace it (closeSegment, then openSegment).
    } else if (!desc.ok()) {
      MC_LOG(warn) << "transfer engine: segment '" << name
                   << "' keeps the descriptor it was opened with";
    } else if (seg.inflight == 0) {
      if (desc->generation != seg.desc.generation ||
          desc->worker_address != seg.desc.worker_address) {
        endpoints_->remove(known);
      } else if (te::EndpointStore::Entry e = endpoints_->get(known)) {
        e->rkeys.clear();
        e->rkeys.resize(desc->buffers.size());
      }
      seg.desc = std::move(*desc);
      seg.last_rails = nullptr;  // its buffer indexes may name other buffers now
    }
    return known;
  }
  if (!desc.ok()) return static_cast<SegmentHandle>(desc.status());
  auto seg = std::make_unique<RemoteSegment>();
  seg->name = name;
  seg->desc = std::move(*desc);
  const SegmentID id = next_segment_++;
  MC_LOG(debug) << "transfer engine: segment '" << name << "' opened as " << id << " with "
                << seg->desc.buffers.size() << " buffers";
  segments_[id] = std::move(seg);
  return id;
}

int TransferEngine::Impl::close_segment(SegmentHandle id) {
  // A file segment: no other one opens meanwhile (the last one closes the
  // nvmeof transport below).
  std::unique_lock<std::mutex> open_lock(open_mu_, std::defer_lock);
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = segments_.find(id);
    if (it != segments_.end() && it->second->file) open_lock.lock();
  }
  std::lock_guard<std::mutex> lock(mu_);
  auto it = segments_.find(id);
  if (it == segments_.end()) {
    MC_LOG(error) << "transfer engine: closeSegment: unknown segment " << id;
    return static_cast<int>(Status::NoElem);
  }
  if (it->second->inflight != 0) {
    MC_LOG(error) << "transfer engine: closeSegment: segment " << id << " has "
                  << it->second->inflight << " unfinished tasks";
    return static_cast<int>(Status::Busy);
  }
  endpoints_->remove(id);
  segments_.erase(it);  // a file segment's files close with it
  return 0;
}

int TransferEngine::Impl::segment_buffers(SegmentHandle id, std::vector<SegmentBufferInfo>& out) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = segments_.find(id);
  if (it == segments_.end()) return static_cast<int>(Status::NoElem);
  out.clear();
  for (const auto& b : it->second->desc.buffers) out.push_back({b.name, b.addr, b.length, ""});
  for (const FileBuffer& f : it->second->files) {
    out.push_back({"nvmeof", f.offset, f.length, f.path});
  }
  return 0;
}

std::string TransferEngine::Impl::ip_port() const {
  if (!rpc_) return "";
  return te::join_host_port(ip_, rpc_->port());
}

size_t TransferEngine::Impl::endpoint_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return endpoints_ ? endpoints_->size() : 0;
}

int TransferEngine::Impl::endpoint_store_stats(EndpointStoreStats& out) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (!endpoints_) {
    MC_LOG(error) << "transfer engine: getEndpointStoreStats: engine not initialised";
    return -1;
  }
  const te::EndpointStore::Counters& c = endpoints_->counters();
  out.opened = c.inserted;
  out.evicted = c.evicted;
  out.evicted_busy = c.evicted_busy;
  out.removed = c.removed;
  out.cached = endpoints_->size();
  out.draining = endpoints_->retired().size();
  return 0;
}

}  // namespace mc
