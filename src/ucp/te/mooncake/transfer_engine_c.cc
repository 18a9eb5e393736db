// SPDX-License-Identifier: Apache-2.0
// libtransfer_engine: Mooncake's C API (mooncake/transfer_engine_c.h) over
// mc::TransferEngine. Handles are checked against the live set, so a stale
// or forged handle is an error, not a crash; nothing throws past here.
#include "mooncake/transfer_engine_c.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <set>
#include <string>
#include <vector>

#include "mc/transfer_engine.h"
#include "protocol.h"
#include "shim.h"
#include "ucs/log/log.h"

namespace {

constexpr int kInvalidParam = -4;
constexpr int kUnsupported = -8;
constexpr int kNoElem = -11;
constexpr int kTruncated = -15;

static_assert(OPCODE_READ == static_cast<int>(mc::TransferRequest::READ) &&
              OPCODE_WRITE == static_cast<int>(mc::TransferRequest::WRITE));
static_assert(STATUS_WAITING == mc::WAITING && STATUS_PENDING == mc::PENDING &&
              STATUS_INVALID == mc::INVALID && STATUS_CANCELED == mc::CANCELED &&
              STATUS_COMPLETED == mc::COMPLETED && STATUS_TIMEOUT == mc::TIMEOUT &&
              STATUS_FAILED == mc::FAILED);
static_assert(INVALID_BATCH == mc::kInvalidBatchID);

using mooncake::ProtocolTls;

const ProtocolTls* find_protocol(const char* name) {
  return mooncake::find_protocol_tls(name);
}

struct Engine {
  mc::TransferEngine engine;
  std::mutex mu;  ///< guards the fields below
  bool started = false;
  int start_status = 0;  ///< init's return once started
  std::string conn, name, host;
  uint16_t port = 0;
  std::set<std::string> installed;  ///< protocols installed before start
  std::string self;                 ///< the engine's own segment, LOCAL_SEGMENT
};

std::mutex g_mu;  ///< guards g_live
std::set<Engine*> g_live;

Engine* live(transfer_engine_t handle, const char* what) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto* e = static_cast<Engine*>(handle);
  if (e == nullptr || g_live.count(e) == 0) {
    MC_LOG(error) << what << ": " << (e ? "not an engine of createTransferEngine" : "NULL engine");
    return nullptr;
  }
  return e;
}

// Initialises the engine on first use (auto_discover 0), opening the
// installed protocols' transports; under e->mu.
int start_locked(Engine* e) {
  if (e->started) return e->start_status;
  e->started = true;
  const std::string tls = mooncake::protocols_tls({e->installed.begin(), e->installed.end()});
  if (!tls.empty()) {
    e->engine.setConfig("MC_TLS", tls);
  } else {
    MC_LOG(info) << "transfer engine: no network protocol installed; opening what MC_TLS allows";
  }
  e->start_status = e->engine.init(e->conn, e->name, e->host, e->port);
  if (e->start_status != 0) return e->start_status;
  // LOCAL_SEGMENT: the first handle opened is 0.
  e->self = e->conn == "P2PHANDSHAKE" ? e->engine.getLocalIpAndPort() : e->name;
  const int32_t local = e->engine.openSegment(e->self);
  if (local != LOCAL_SEGMENT) {
    MC_LOG(error) << "transfer engine: cannot open its own segment as LOCAL_SEGMENT (" << local
                  << ")";
    e->start_status = local < 0 ? local : -1;
  }
  return e->start_status;
}

// After a registration: LOCAL_SEGMENT takes the own segment's current
// buffers (openSegment of an open name rereads its descriptor when no task
// to it is unfinished; else the next registration does).
int relist_local(transfer_engine_t handle, int rc) {
  auto* e = static_cast<Engine*>(handle);
  if (rc == 0 && e->engine.openSegment(e->self) != LOCAL_SEGMENT) {
    MC_LOG(warn) << "transfer engine: LOCAL_SEGMENT keeps its previous buffers";
  }
  return rc;
}

// The started engine, or nullptr with *rc set.
mc::TransferEngine* started(transfer_engine_t handle, const char* what, int* rc) {
  Engine* e = live(handle, what);
  if (e == nullptr) {
    *rc = kInvalidParam;
    return nullptr;
  }
  std::lock_guard<std::mutex> lock(e->mu);
  *rc = start_locked(e);
  if (*rc != 0) {
    MC_LOG(error) << what << ": the engine did not start (" << *rc << ")";
    return nullptr;
  }
  return &e->engine;
}

template <typename R, typename Fn>
R guard(const char* what, R on_error, Fn&& fn) {
  try {
    return fn();
  } catch (const std::exception& e) {
    MC_LOG(error) << what << ": " << e.what();
  } catch (...) {
    MC_LOG(error) << what << ": unknown exception";
  }
  return on_error;
}

// Mooncake's requests as mc's; false (logged) for one mc cannot take.
int to_requests(const char* what, const transfer_request* entries, size_t count,
                std::vector<mc::TransferRequest>* out) {
  if (entries == nullptr && count != 0) {
    MC_LOG(error) << what << ": NULL entries";
    return kInvalidParam;
  }
  out->reserve(count);
  for (size_t i = 0; i < count; ++i) {
    const transfer_request& r = entries[i];
    if (r.opcode != OPCODE_READ && r.opcode != OPCODE_WRITE) {
      MC_LOG(error) << what << ": entry " << i << " has opcode " << r.opcode;
      return kInvalidParam;
    }
    out->push_back({static_cast<mc::TransferRequest::OpCode>(r.opcode), r.source, r.target_id,
                    r.target_offset, static_cast<size_t>(r.length)});
  }
  return 0;
}

mc::NotifyDesc to_desc(const notify_msg_t& m) {
  return {m.name ? m.name : "", m.msg ? m.msg : ""};
}

char* dup_cut(const std::string& s) {
  const size_t n = std::min(s.size(), std::strlen(s.c_str()));
  char* out = static_cast<char*>(std::malloc(n + 1));
  if (out == nullptr) return nullptr;
  std::memcpy(out, s.data(), n);
  out[n] = '\0';
  return out;
}

}  // namespace

extern "C" {

transfer_engine_t createTransferEngine(const char* metadata_conn_string,
                                       const char* local_server_name, const char* ip_or_host_name,
                                       uint64_t rpc_port, int auto_discover) {
  if (metadata_conn_string == nullptr || local_server_name == nullptr || rpc_port > 65535) {
    MC_LOG(error) << "createTransferEngine: "
                  << (rpc_port > 65535 ? "rpc_port past 65535" : "NULL metadata or server name");
    return nullptr;
  }
  return guard("createTransferEngine", transfer_engine_t{nullptr}, [&]() -> transfer_engine_t {
    auto* e = new (std::nothrow) Engine();
    if (e == nullptr) return nullptr;
    e->conn = metadata_conn_string;
    e->name = local_server_name;
    e->host = ip_or_host_name ? ip_or_host_name : "";
    e->port = static_cast<uint16_t>(rpc_port);
    if (auto_discover != 0) {
      std::lock_guard<std::mutex> lock(e->mu);
      if (start_locked(e) != 0) {
        delete e;
        return nullptr;
      }
    }
    std::lock_guard<std::mutex> lock(g_mu);
    g_live.insert(e);
    return e;
  });
}

void destroyTransferEngine(transfer_engine_t engine) {
  Engine* e = nullptr;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    e = static_cast<Engine*>(engine);
    if (e == nullptr || g_live.erase(e) == 0) {
      MC_LOG(error) << "destroyTransferEngine: "
                    << (e ? "not a live engine of createTransferEngine" : "NULL engine");
      return;
    }
  }
  guard("destroyTransferEngine", 0, [&] {
    delete e;
    return 0;
  });
}

int discoverTopology(transfer_engine_t engine) {
  if (live(engine, "discoverTopology") == nullptr) return kInvalidParam;
  return guard("discoverTopology", -1, [] { return mc::mooncake_api::discover_topology(); });
}

int getLocalIpAndPort(transfer_engine_t engine, char* buf_out, size_t buf_len) {
  int rc = 0;
  mc::TransferEngine* te = started(engine, "getLocalIpAndPort", &rc);
  if (te == nullptr) return rc;
  const std::string s = te->getLocalIpAndPort();
  if (buf_out == nullptr || s.size() + 1 > buf_len) {
    MC_LOG(error) << "getLocalIpAndPort: "
                  << (buf_out ? "buffer too small for " + s : "NULL buffer");
    return kInvalidParam;
  }
  std::memcpy(buf_out, s.c_str(), s.size() + 1);
  return 0;
}

transport_t installTransport(transfer_engine_t engine, const char* proto, void** args) {
  Engine* e = live(engine, "installTransport");
  if (e == nullptr || proto == nullptr) return nullptr;
  return guard("installTransport", transport_t{nullptr}, [&]() -> transport_t {
    const ProtocolTls* p = find_protocol(proto);
    if (p == nullptr) {
      MC_LOG(error) << "installTransport: '" << proto << "' "
                    << (std::strncmp(proto, "nvlink", 6) == 0 ? "is not offered: mc has no NVLink "
                                                                "transport"
                                                              : "is not a protocol (tcp, rdma, "
                                                                "nvmeof)");
      return nullptr;
    }
    if (args != nullptr) {
      MC_LOG(info) << "installTransport: " << proto
                   << ": args not read; mc takes the NIC priority matrix from "
                      "MC_TOPO_PRIORITY_MATRIX or discovers it";
    }
    std::lock_guard<std::mutex> lock(e->mu);
    // The token: the protocol's entry, stable for the process.
    auto* token = const_cast<ProtocolTls*>(p);
    if (!e->started) {
      e->installed.insert(p->name);
      return token;
    }
    if (p->tls.empty()) return token;
    const std::vector<std::string> open = e->engine.getTransports();
    for (const std::string& tl : p->tls) {
      if (std::find(open.begin(), open.end(), tl) != open.end()) return token;
    }
    MC_LOG(error) << "installTransport: " << proto
                  << ": the engine started without it (MC_TLS, or no device); install it before "
                     "the first other call of an engine made with auto_discover 0";
    return nullptr;
  });
}

int uninstallTransport(transfer_engine_t engine, const char* proto) {
  Engine* e = live(engine, "uninstallTransport");
  if (e == nullptr || proto == nullptr) return kInvalidParam;
  std::lock_guard<std::mutex> lock(e->mu);
  if (e->started) {
    MC_LOG(error) << "uninstallTransport: " << proto
                  << ": mc cannot close a transport of a running engine";
    return kUnsupported;
  }
  if (e->installed.erase(proto) == 0) {
    MC_LOG(error) << "uninstallTransport: '" << proto << "' is not installed";
    return kNoElem;
  }
  return 0;
}

segment_id_t openSegment(transfer_engine_t engine, const char* segment_name) {
  int rc = 0;
  mc::TransferEngine* te = started(engine, "openSegment", &rc);
  if (te == nullptr) return rc;
  if (segment_name == nullptr) {
    MC_LOG(error) << "openSegment: NULL segment name";
    return kInvalidParam;
  }
  return guard("openSegment", segment_id_t{-1}, [&] { return te->openSegment(segment_name); });
}

segment_id_t openSegmentNoCache(transfer_engine_t engine, const char* segment_name) {
  return openSegment(engine, segment_name);
}

int closeSegment(transfer_engine_t engine, segment_id_t segment_id) {
  int rc = 0;
  mc::TransferEngine* te = started(engine, "closeSegment", &rc);
  if (te == nullptr) return rc;
  return guard("closeSegment", -1, [&] { return te->closeSegment(segment_id); });
}

int warmupEfaSegment(transfer_engine_t engine, const char* segment_name) {
  int rc = 0;
  mc::TransferEngine* te = started(engine, "warmupEfaSegment", &rc);
  if (te == nullptr) return rc;
  if (segment_name == nullptr) {
    MC_LOG(error) << "warmupEfaSegment: NULL segment name";
    return kInvalidParam;
  }
  return guard("warmupEfaSegment", -1, [&] {
    const int32_t seg = te->openSegment(segment_name);
    return seg < 0 ? seg : te->warmupSegment(seg);
  });
}

int removeLocalSegment(transfer_engine_t engine, const char* segment_name) {
  if (live(engine, "removeLocalSegment") == nullptr) return kInvalidParam;
  MC_LOG(error) << "removeLocalSegment: '" << (segment_name ? segment_name : "(null)")
                << "': not offered; mc publishes the engine's segment for its lifetime and "
                   "removes it in destroyTransferEngine";
  return kUnsupported;
}

int registerLocalMemory(transfer_engine_t engine, void* addr, size_t length, const char* location,
                        int remote_accessible) {
  int rc = 0;
  mc::TransferEngine* te = started(engine, "registerLocalMemory", &rc);
  if (te == nullptr) return rc;
  return guard("registerLocalMemory", -1, [&] {
    return relist_local(engine, te->registerLocalMemory(addr, length, location ? location : "*",
                                                        remote_accessible != 0));
  });
}

int unregisterLocalMemory(transfer_engine_t engine, void* addr) {
  int rc = 0;
  mc::TransferEngine* te = started(engine, "unregisterLocalMemory", &rc);
  if (te == nullptr) return rc;
  return guard("unregisterLocalMemory", -1,
               [&] { return relist_local(engine, te->unregisterLocalMemory(addr)); });
}

int registerLocalMemoryBatch(transfer_engine_t engine, buffer_entry_t* buffer_list,
                             size_t buffer_len, const char* location) {
  int rc = 0;
  mc::TransferEngine* te = started(engine, "registerLocalMemoryBatch", &rc);
  if (te == nullptr) return rc;
  if (buffer_list == nullptr && buffer_len != 0) {
    MC_LOG(error) << "registerLocalMemoryBatch: NULL buffer list";
    return kInvalidParam;
  }
  return guard("registerLocalMemoryBatch", -1, [&] {
    std::vector<mc::BufferEntry> bufs;
    for (size_t i = 0; i < buffer_len; ++i)
      bufs.push_back({buffer_list[i].addr, buffer_list[i].length});
    return relist_local(engine, te->registerLocalMemoryBatch(bufs, location ? location : "*"));
  });
}

int unregisterLocalMemoryBatch(transfer_engine_t engine, void** addr_list, size_t addr_len) {
  int rc = 0;
  mc::TransferEngine* te = started(engine, "unregisterLocalMemoryBatch", &rc);
  if (te == nullptr) return rc;
  if (addr_list == nullptr && addr_len != 0) {
    MC_LOG(error) << "unregisterLocalMemoryBatch: NULL address list";
    return kInvalidParam;
  }
  return guard("unregisterLocalMemoryBatch", -1, [&] {
    return relist_local(engine, te->unregisterLocalMemoryBatch(
                                    std::vector<void*>(addr_list, addr_list + addr_len)));
  });
}

batch_id_t allocateBatchID(transfer_engine_t engine, size_t batch_size) {
  int rc = 0;
  mc::TransferEngine* te = started(engine, "allocateBatchID", &rc);
  if (te == nullptr) return INVALID_BATCH;
  return guard("allocateBatchID", batch_id_t{INVALID_BATCH},
               [&] { return te->allocateBatchID(batch_size); });
}

int submitTransfer(transfer_engine_t engine, batch_id_t batch_id, struct transfer_request* entries,
                   size_t count) {
  int rc = 0;
  mc::TransferEngine* te = started(engine, "submitTransfer", &rc);
  if (te == nullptr) return rc;
  return guard("submitTransfer", -1, [&] {
    std::vector<mc::TransferRequest> reqs;
    const int bad = to_requests("submitTransfer", entries, count, &reqs);
    return bad != 0 ? bad : te->submitTransfer(batch_id, reqs);
  });
}

int submitTransferWithNotify(transfer_engine_t engine, batch_id_t batch_id,
                             struct transfer_request* entries, size_t count,
                             notify_msg_t notify_msg) {
  int rc = 0;
  mc::TransferEngine* te = started(engine, "submitTransferWithNotify", &rc);
  if (te == nullptr) return rc;
  return guard("submitTransferWithNotify", -1, [&] {
    std::vector<mc::TransferRequest> reqs;
    const int bad = to_requests("submitTransferWithNotify", entries, count, &reqs);
    return bad != 0 ? bad : te->submitTransferWithNotify(batch_id, reqs, to_desc(notify_msg));
  });
}

notify_msg_t* getNotifsFromEngine(transfer_engine_t engine, int* size) {
  int rc = 0;
  mc::TransferEngine* te = started(engine, "getNotifsFromEngine", &rc);
  if (size == nullptr) {
    MC_LOG(error) << "getNotifsFromEngine: NULL size";
    return nullptr;
  }
  *size = rc;
  if (te == nullptr) return nullptr;
  return guard("getNotifsFromEngine", static_cast<notify_msg_t*>(nullptr), [&]() -> notify_msg_t* {
    std::vector<mc::NotifyDesc> got;
    if ((rc = te->getNotifies(got)) != 0) {
      *size = rc;
      return nullptr;
    }
    auto* arr = static_cast<notify_msg_t*>(
        std::calloc(std::max<size_t>(got.size(), 1), sizeof(notify_msg_t)));
    *size = -9;
    if (arr == nullptr) return nullptr;
    for (size_t i = 0; i < got.size(); ++i) {
      arr[i].name = dup_cut(got[i].name);
      arr[i].msg = dup_cut(got[i].notify_msg);
      if (arr[i].name == nullptr || arr[i].msg == nullptr) {
        freeNotifsMsgBuf(arr, static_cast<int>(i + 1));
        return nullptr;
      }
    }
    *size = static_cast<int>(got.size());
    return arr;
  });
}

int freeNotifsMsgBuf(notify_msg_t* msg, int size) {
  if (msg == nullptr) return size == 0 ? 0 : kInvalidParam;
  for (int i = 0; i < size; ++i) {
    std::free(msg[i].name);
    std::free(msg[i].msg);
  }
  std::free(msg);
  return 0;
}

int genNotifyInEngine(transfer_engine_t engine, uint64_t target_id, notify_msg_t notify_msg) {
  int rc = 0;
  mc::TransferEngine* te = started(engine, "genNotifyInEngine", &rc);
  if (te == nullptr) return rc;
  if (target_id > INT32_MAX) {
    MC_LOG(error) << "genNotifyInEngine: segment " << target_id << " is not a handle";
    return kNoElem;
  }
  return guard("genNotifyInEngine", -1, [&] {
    return te->sendNotifyByID(static_cast<int32_t>(target_id), to_desc(notify_msg));
  });
}

int getTransferStatus(transfer_engine_t engine, batch_id_t batch_id, size_t task_id,
                      struct transfer_status* status) {
  int rc = 0;
  mc::TransferEngine* te = started(engine, "getTransferStatus", &rc);
  if (te == nullptr) return rc;
  if (status == nullptr) {
    MC_LOG(error) << "getTransferStatus: NULL status";
    return kInvalidParam;
  }
  return guard("getTransferStatus", -1, [&] {
    mc::TransferStatus s{};
    const int r = te->getTransferStatus(batch_id, task_id, s);
    if (r == 0) {
      status->status = mc::mooncake_api::task_status(s);
      status->transferred_bytes = s.transferred;
    }
    return r;
  });
}

int freeBatchID(transfer_engine_t engine, batch_id_t batch_id) {
  int rc = 0;
  mc::TransferEngine* te = started(engine, "freeBatchID", &rc);
  if (te == nullptr) return rc;
  return guard("freeBatchID", -1, [&] { return te->freeBatchID(batch_id); });
}

int syncSegmentCache(transfer_engine_t engine) {
  int rc = 0;
  if (started(engine, "syncSegmentCache", &rc) == nullptr) return rc;
  MC_LOG(debug) << "syncSegmentCache: mc keeps no segment cache; openSegment reads the descriptor";
  return 0;
}

int getNicLoadStats(transfer_engine_t engine, nic_load_stat_t* stats, size_t* count) {
  int rc = 0;
  mc::TransferEngine* te = started(engine, "getNicLoadStats", &rc);
  if (te == nullptr) return rc;
  if (count == nullptr || (stats == nullptr && *count != 0)) {
    MC_LOG(error) << "getNicLoadStats: NULL " << (count ? "stats" : "count");
    return kInvalidParam;
  }
  return guard("getNicLoadStats", -1, [&] {
    std::vector<mc::NicLoadStat> got;
    if (const int r = te->getNicLoadStats(got); r != 0) return r;
    for (size_t i = 0; i < got.size() && i < *count; ++i) {
      const size_t n = std::min(got[i].device_name.size(), sizeof(stats[i].device_name) - 1);
      std::memcpy(stats[i].device_name, got[i].device_name.data(), n);
      stats[i].device_name[n] = '\0';
      stats[i].inflight_bytes = got[i].inflight_bytes;
      stats[i].ewma_bandwidth_bps = got[i].ewma_bandwidth_bps;
    }
    *count = got.size();
    return 0;
  });
}

void enableGracefulShutdown(transfer_engine_t engine) {
  if (live(engine, "enableGracefulShutdown") == nullptr) return;
  mc::mooncake_api::note_no_graceful_shutdown();
}

int showLinks(transfer_engine_t engine, char* buf_out, size_t buf_len, int json) {
  int rc = 0;
  mc::TransferEngine* te = started(engine, "showLinks", &rc);
  if (te == nullptr) return rc;
  if (buf_out == nullptr || buf_len == 0) {
    MC_LOG(error) << "showLinks: " << (buf_out ? "buf_len 0" : "NULL buffer");
    return kInvalidParam;
  }
  return guard("showLinks", -1, [&] {
    const std::string s = mc::mooncake_api::show_links(*te, json != 0);
    const size_t n = std::min(s.size(), buf_len - 1);
    std::memcpy(buf_out, s.data(), n);
    buf_out[n] = '\0';
    if (n < s.size()) {
      MC_LOG(error) << "showLinks: " << s.size() + 1 << " bytes do not fit in " << buf_len;
      return kTruncated;
    }
    return 0;
  });
}

}  // extern "C"
