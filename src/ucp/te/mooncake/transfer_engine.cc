// SPDX-License-Identifier: Apache-2.0
// mooncake::TransferEngine (mooncake/transfer_engine.h) over
// mc::TransferEngine: Mooncake's types converted at each call, the engine
// started lazily when auto_discover is false (after installTransport).
#include "mooncake/transfer_engine.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <set>

#include "mc/transfer_engine.h"
#include "protocol.h"
#include "shim.h"
#include "ucs/log/log.h"

namespace mooncake {

namespace {

constexpr int kInvalidParam = -4;
constexpr int kUnsupported = -8;

static_assert(static_cast<int>(TransferRequest::READ) == mc::TransferRequest::READ &&
              static_cast<int>(TransferRequest::WRITE) == mc::TransferRequest::WRITE);
static_assert(static_cast<int>(Transport::WAITING) == mc::WAITING &&
              static_cast<int>(Transport::FAILED) == mc::FAILED &&
              static_cast<int>(Transport::COMPLETED) == mc::COMPLETED);
static_assert(INVALID_BATCH_ID == mc::kInvalidBatchID);

// The tokens installTransport returns, one per protocol of protocol.h.
struct Protocol {
  Transport token;
  const std::vector<std::string>& tls;
};

Protocol* find_protocol(const std::string& name) {
  static std::vector<Protocol> kProtocols = [] {
    std::vector<Protocol> out;
    for (const char* n : {"tcp", "rdma", "nvmeof"}) {
      const ProtocolTls* p = find_protocol_tls(n);
      out.push_back({Transport(p->name), p->tls});
    }
    return out;
  }();
  for (Protocol& p : kProtocols) {
    if (name == p.token.getName()) return &p;
  }
  return nullptr;
}

// A Mooncake segment id as mc's (out of range: -1, an INVALID task).
int32_t to_mc_segment(SegmentID id) {
  return id <= static_cast<SegmentID>(INT32_MAX) ? static_cast<int32_t>(id) : -1;
}

std::vector<mc::TransferRequest> to_mc(const std::vector<TransferRequest>& entries) {
  std::vector<mc::TransferRequest> out;
  out.reserve(entries.size());
  for (const TransferRequest& r : entries) {
    out.push_back({static_cast<mc::TransferRequest::OpCode>(r.opcode), r.source,
                   to_mc_segment(r.target_id), r.target_offset, r.length});
  }
  return out;
}

Status to_status(int rc, const char* what) {
  return rc == 0 ? Status::OK() : Status::FromCode(rc, std::string(what) + " failed (see log)");
}

}  // namespace

class TransferEngine::Impl {
 public:
  explicit Impl(bool auto_discover) : auto_discover_(auto_discover) {}

  // The started engine, or nullptr (logged).
  mc::TransferEngine* engine(const char* what) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!inited_) {
      MC_LOG(error) << what << ": init was not called";
      return nullptr;
    }
    return start_locked() == 0 ? engine_.get() : nullptr;
  }

  int init(const std::string& conn, const std::string& name, const std::string& host,
           uint64_t port) {
    std::lock_guard<std::mutex> lock(mu_);
    if (inited_ || port > 65535) {
      MC_LOG(error) << "init: " << (inited_ ? "called twice" : "rpc_port past 65535");
      return kInvalidParam;
    }
    inited_ = true;
    conn_ = conn;
    name_ = name;
    host_ = host;
    port_ = static_cast<uint16_t>(port);
    return auto_discover_ ? start_locked() : 0;
  }

  int free_engine() {
    std::lock_guard<std::mutex> lock(mu_);
    engine_.reset();
    start_status_ = kInvalidParam;  // every later call fails
    started_ = true;
    return 0;
  }

  Transport* install(const std::string& proto) {
    Protocol* p = find_protocol(proto);
    if (p == nullptr) {
      MC_LOG(error) << "installTransport: '" << proto << "' "
                    << (proto.rfind("nvlink", 0) == 0 ? "is not offered: mc has no NVLink transport"
                                                      : "is not a protocol (tcp, rdma, nvmeof)");
      return nullptr;
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (!started_) {
      installed_.insert(proto);
      return &p->token;
    }
    if (p->tls.empty() || !engine_) return engine_ ? &p->token : nullptr;
    const std::vector<std::string> open = engine_->getTransports();
    for (const std::string& tl : p->tls) {
      if (std::find(open.begin(), open.end(), tl) != open.end()) return &p->token;
    }
    MC_LOG(error) << "installTransport: " << proto
                  << ": the engine started without it (MC_TLS, or no device)";
    return nullptr;
  }

  int uninstall(const std::string& proto) {
    std::lock_guard<std::mutex> lock(mu_);
    if (started_) {
      MC_LOG(error) << "uninstallTransport: " << proto
                    << ": mc cannot close a transport of a running engine";
      return kUnsupported;
    }
    return installed_.erase(proto) == 1 ? 0 : -11;
  }

 private:
  int start_locked() {
    if (started_) return start_status_;
    started_ = true;
    engine_ = std::make_unique<mc::TransferEngine>();
    const std::string tls = protocols_tls({installed_.begin(), installed_.end()});
    if (!auto_discover_ && !tls.empty()) engine_->setConfig("MC_TLS", tls);
    start_status_ = engine_->init(conn_, name_, host_, port_);
    return start_status_;
  }

  const bool auto_discover_;
  std::mutex mu_;  ///< guards everything below
  bool inited_ = false;
  bool started_ = false;
  int start_status_ = 0;
  std::string conn_, name_, host_;
  uint16_t port_ = 0;
  std::set<std::string> installed_;
  std::unique_ptr<mc::TransferEngine> engine_;
};

TransferEngine::TransferEngine(bool auto_discover) : impl_(std::make_unique<Impl>(auto_discover)) {}

TransferEngine::~TransferEngine() = default;

int TransferEngine::init(const std::string& conn, const std::string& local_server_name,
                         const std::string& ip_or_host_name, uint64_t rpc_port) {
  return impl_->init(conn, local_server_name, ip_or_host_name, rpc_port);
}

int TransferEngine::freeEngine() {
  return impl_->free_engine();
}

Transport* TransferEngine::installTransport(const std::string& proto, void** args) {
  if (args != nullptr) {
    MC_LOG(info) << "installTransport: " << proto
                 << ": args not read; mc takes the NIC priority matrix from "
                    "MC_TOPO_PRIORITY_MATRIX or discovers it";
  }
  return impl_->install(proto);
}

int TransferEngine::uninstallTransport(const std::string& proto) {
  return impl_->uninstall(proto);
}

std::string TransferEngine::getLocalIpAndPort() {
  mc::TransferEngine* e = impl_->engine("getLocalIpAndPort");
  return e ? e->getLocalIpAndPort() : std::string();
}

int TransferEngine::getRpcPort() {
  const std::string ip_port = getLocalIpAndPort();
  const size_t colon = ip_port.rfind(':');
  return colon == std::string::npos ? kInvalidParam : std::atoi(ip_port.c_str() + colon + 1);
}

SegmentHandle TransferEngine::openSegment(const std::string& segment_name) {
  mc::TransferEngine* e = impl_->engine("openSegment");
  const int32_t id = e ? e->openSegment(segment_name) : kInvalidParam;
  return static_cast<SegmentHandle>(static_cast<int64_t>(id));
}

int TransferEngine::closeSegment(SegmentHandle handle) {
  mc::TransferEngine* e = impl_->engine("closeSegment");
  return e ? e->closeSegment(to_mc_segment(handle)) : kInvalidParam;
}

int TransferEngine::removeLocalSegment(const std::string& segment_name) {
  MC_LOG(error) << "removeLocalSegment: '" << segment_name
                << "': not offered; mc publishes the engine's segment for its lifetime";
  return kUnsupported;
}

int TransferEngine::registerLocalMemory(void* addr, size_t length, const std::string& location,
                                        bool remote_accessible, bool update_metadata) {
  if (!update_metadata) {
    MC_LOG(error) << "registerLocalMemory: update_metadata false: mc publishes every registration";
    return kUnsupported;
  }
  mc::TransferEngine* e = impl_->engine("registerLocalMemory");
  return e ? e->registerLocalMemory(addr, length, location, remote_accessible) : kInvalidParam;
}

int TransferEngine::unregisterLocalMemory(void* addr, bool update_metadata) {
  if (!update_metadata) {
    MC_LOG(error) << "unregisterLocalMemory: update_metadata false: mc publishes every change";
    return kUnsupported;
  }
  mc::TransferEngine* e = impl_->engine("unregisterLocalMemory");
  return e ? e->unregisterLocalMemory(addr) : kInvalidParam;
}

int TransferEngine::registerLocalMemoryBatch(const std::vector<BufferEntry>& buffer_list,
                                             const std::string& location) {
  mc::TransferEngine* e = impl_->engine("registerLocalMemoryBatch");
  if (e == nullptr) return kInvalidParam;
  std::vector<mc::BufferEntry> bufs;
  for (const BufferEntry& b : buffer_list) bufs.push_back({b.addr, b.length});
  return e->registerLocalMemoryBatch(bufs, location);
}

int TransferEngine::unregisterLocalMemoryBatch(const std::vector<void*>& addr_list) {
  mc::TransferEngine* e = impl_->engine("unregisterLocalMemoryBatch");
  return e ? e->unregisterLocalMemoryBatch(addr_list) : kInvalidParam;
}

BatchID TransferEngine::allocateBatchID(size_t batch_size) {
  mc::TransferEngine* e = impl_->engine("allocateBatchID");
  return e ? e->allocateBatchID(batch_size) : INVALID_BATCH_ID;
}

Status TransferEngine::freeBatchID(BatchID batch_id) {
  mc::TransferEngine* e = impl_->engine("freeBatchID");
  return to_status(e ? e->freeBatchID(batch_id) : kInvalidParam, "freeBatchID");
}

Status TransferEngine::submitTransfer(BatchID batch_id,
                                      const std::vector<TransferRequest>& entries) {
  mc::TransferEngine* e = impl_->engine("submitTransfer");
  return to_status(e ? e->submitTransfer(batch_id, to_mc(entries)) : kInvalidParam,
                   "submitTransfer");
}

Status TransferEngine::submitTransferWithNotify(BatchID batch_id,
                                                const std::vector<TransferRequest>& entries,
                                                TransferMetadata::NotifyDesc notify_msg) {
  mc::TransferEngine* e = impl_->engine("submitTransferWithNotify");
  if (e == nullptr) return Status::InvalidArgument("the engine did not start");
  return to_status(e->submitTransferWithNotify(batch_id, to_mc(entries),
                                               {notify_msg.name, notify_msg.notify_msg}),
                   "submitTransferWithNotify");
}

int TransferEngine::getNotifies(std::vector<TransferMetadata::NotifyDesc>& notifies) {
  mc::TransferEngine* e = impl_->engine("getNotifies");
  if (e == nullptr) return kInvalidParam;
  std::vector<mc::NotifyDesc> got;
  const int rc = e->getNotifies(got);
  notifies.clear();
  for (mc::NotifyDesc& n : got) notifies.push_back({std::move(n.name), std::move(n.notify_msg)});
  return rc;
}

int TransferEngine::sendNotifyByID(SegmentID target_id, TransferMetadata::NotifyDesc notify_msg) {
  mc::TransferEngine* e = impl_->engine("sendNotifyByID");
  return e ? e->sendNotifyByID(to_mc_segment(target_id), {notify_msg.name, notify_msg.notify_msg})
           : kInvalidParam;
}

int TransferEngine::sendNotifyByName(std::string remote_agent,
                                     TransferMetadata::NotifyDesc notify_msg) {
  mc::TransferEngine* e = impl_->engine("sendNotifyByName");
  return e ? e->sendNotifyByName(remote_agent, {notify_msg.name, notify_msg.notify_msg})
           : kInvalidParam;
}

Status TransferEngine::getTransferStatus(BatchID batch_id, size_t task_id, TransferStatus& status) {
  mc::TransferEngine* e = impl_->engine("getTransferStatus");
  if (e == nullptr) return Status::InvalidArgument("the engine did not start");
  mc::TransferStatus s{};
  const int rc = e->getTransferStatus(batch_id, task_id, s);
  if (rc == 0) {
    status = {static_cast<TransferStatusEnum>(mc::mooncake_api::task_status(s)), s.transferred};
  }
  return to_status(rc, "getTransferStatus");
}

Status TransferEngine::getBatchTransferStatus(BatchID batch_id, TransferStatus& status) {
  mc::TransferEngine* e = impl_->engine("getBatchTransferStatus");
  if (e == nullptr) return Status::InvalidArgument("the engine did not start");
  std::vector<mc::TransferStatus> all;
  const int rc = e->getBatchTransferStatus(batch_id, all);
  if (rc != 0) return to_status(rc, "getBatchTransferStatus");
  status = {Transport::COMPLETED, 0};
  bool running = false;
  for (const mc::TransferStatus& s : all) {
    status.transferred_bytes += s.transferred;
    if (s.s == mc::WAITING || s.s == mc::PENDING) {
      running = true;
    } else if (s.s != mc::COMPLETED && status.s == Transport::COMPLETED) {
      status.s = static_cast<TransferStatusEnum>(mc::mooncake_api::task_status(s));
    }
  }
  if (running && status.s == Transport::COMPLETED) status.s = Transport::WAITING;
  return Status::OK();
}

Status TransferEngine::getNicLoadStats(std::vector<NicLoadStats>& stats) const {
  stats.clear();
  mc::TransferEngine* e = impl_->engine("getNicLoadStats");
  if (e == nullptr) return Status::InvalidArgument("the engine did not start");
  std::vector<mc::NicLoadStat> got;
  const int rc = e->getNicLoadStats(got);
  for (const mc::NicLoadStat& g : got) {
    stats.push_back({g.device_name, g.inflight_bytes, g.ewma_bandwidth_bps});
  }
  return to_status(rc, "getNicLoadStats");
}

void TransferEngine::enableGracefulShutdown() {
  mc::mooncake_api::note_no_graceful_shutdown();
}

std::string TransferEngine::showLinks(bool json) const {
  mc::TransferEngine* e = impl_->engine("showLinks");
  return e ? mc::mooncake_api::show_links(*e, json) : std::string();
}

int TransferEngine::syncSegmentCache(const std::string& segment_name) {
  (void)segment_name;
  return impl_->engine("syncSegmentCache") ? 0 : kInvalidParam;
}

}  // namespace mooncake
