// SPDX-License-Identifier: Apache-2.0
// The C API (mc/transfer_engine_c.h): one opaque handle owning one
// mc::TransferEngine; every entry point catches at the boundary.
#include "mc/transfer_engine_c.h"

#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include "mc/transfer_engine.h"
#include "ucs/log/log.h"

struct mc_te {
  mc::TransferEngine engine;
};

namespace {

static_assert(MC_TE_READ == static_cast<int>(mc::TransferRequest::READ) &&
              MC_TE_WRITE == static_cast<int>(mc::TransferRequest::WRITE));
static_assert(MC_TE_WAITING == static_cast<int>(mc::WAITING) &&
              MC_TE_PENDING == static_cast<int>(mc::PENDING) &&
              MC_TE_INVALID == static_cast<int>(mc::INVALID) &&
              MC_TE_CANCELED == static_cast<int>(mc::CANCELED) &&
              MC_TE_COMPLETED == static_cast<int>(mc::COMPLETED) &&
              MC_TE_TIMEOUT == static_cast<int>(mc::TIMEOUT) &&
              MC_TE_FAILED == static_cast<int>(mc::FAILED));
static_assert(MC_TE_INVALID_BATCH_ID == mc::kInvalidBatchID);

template <typename R, typename Fn>
R guard(const char* what, R on_error, Fn&& fn) {
  try {
    return fn();
  } catch (const std::exception& e) {
    MC_LOG(error) << "mc_te_" << what << ": " << e.what();
  } catch (...) {
    MC_LOG(error) << "mc_te_" << what << ": unknown exception";
  }
  return on_error;
}

// A C notification as the C++ one; NULL with length 0 is empty.
bool to_desc(const mc_te_notify_desc_t* in, mc::NotifyDesc* out) {
  if (in == nullptr || (in->name == nullptr && in->name_len != 0) ||
      (in->notify_msg == nullptr && in->notify_msg_len != 0)) {
    return false;
  }
  out->name.assign(in->name ? in->name : "", in->name_len);
  out->notify_msg.assign(in->notify_msg ? in->notify_msg : "", in->notify_msg_len);
  return true;
}

// A malloc'd copy with a NUL after its bytes; false when out of memory.
bool copy_out(const std::string& s, char** out, size_t* len) {
  *out = static_cast<char*>(std::malloc(s.size() + 1));
  if (*out == nullptr) return false;
  std::memcpy(*out, s.data(), s.size());
  (*out)[s.size()] = '\0';
  *len = s.size();
  return true;
}

// The C requests as the engine's; false at an opcode that is neither READ
// nor WRITE.
bool to_requests(const mc_te_request_t* entries, size_t count,
                 std::vector<mc::TransferRequest>* out) {
  out->reserve(count);
  for (size_t i = 0; i < count; ++i) {
    const mc_te_request_t& e = entries[i];
    if (e.opcode != MC_TE_READ && e.opcode != MC_TE_WRITE) return false;
    out->push_back({static_cast<mc::TransferRequest::OpCode>(e.opcode), e.source, e.target_id,
                    e.target_offset, e.length});
  }
  return true;
}

}  // namespace

extern "C" {

mc_te_t* mc_te_create(void) {
  return new (std::nothrow) mc_te();
}

void mc_te_destroy(mc_te_t* engine) {
  guard("destroy", 0, [&] {
    delete engine;
    return 0;
  });
}

int mc_te_init(mc_te_t* engine, const char* conn, const char* name) {
  if (engine == nullptr || conn == nullptr || name == nullptr) return -1;
  return guard("init", -1, [&] { return engine->engine.init(conn, name); });
}

int mc_te_register_local_memory(mc_te_t* engine, void* addr, size_t size, const char* location,
                                int remote_accessible) {
  if (engine == nullptr) return -1;
  return guard("register_local_memory", -1, [&] {
    return engine->engine.registerLocalMemory(addr, size, location ? location : "*",
                                              remote_accessible != 0);
  });
}

int mc_te_unregister_local_memory(mc_te_t* engine, void* addr) {
  if (engine == nullptr) return -1;
  return guard("unregister_local_memory", -1,
               [&] { return engine->engine.unregisterLocalMemory(addr); });
}

mc_te_segment_id_t mc_te_open_segment(mc_te_t* engine, const char* segment_name) {
  if (engine == nullptr || segment_name == nullptr) return -1;
  return guard("open_segment", mc_te_segment_id_t{-1},
               [&] { return engine->engine.openSegment(segment_name); });
}

int mc_te_close_segment(mc_te_t* engine, mc_te_segment_id_t segment_id) {
  if (engine == nullptr) return -1;
  return guard("close_segment", -1, [&] { return engine->engine.closeSegment(segment_id); });
}

int mc_te_get_segment_buffers(mc_te_t* engine, mc_te_segment_id_t segment_id,
                              mc_te_buffer_info_t* out, size_t max, size_t* count) {
  if (engine == nullptr || count == nullptr || (out == nullptr && max != 0)) return -1;
  return guard("get_segment_buffers", -1, [&] {
    std::vector<mc::SegmentBufferInfo> bufs;
    const int rc = engine->engine.getSegmentBuffers(segment_id, bufs);
    if (rc != 0) return rc;
    *count = bufs.size();
    for (size_t i = 0; i < bufs.size() && i < max; ++i) {
      std::memset(out[i].location, 0, sizeof(out[i].location));
      std::strncpy(out[i].location, bufs[i].location.c_str(), sizeof(out[i].location) - 1);
      out[i].addr = bufs[i].addr;
      out[i].length = bufs[i].length;
    }
    return 0;
  });
}

int mc_te_get_segment_paths(mc_te_t* engine, mc_te_segment_id_t segment_id,
                            const void* local_addr, uint64_t remote_addr,
                            mc_te_path_info_t* out, size_t max, size_t* count) {
  if (engine == nullptr || count == nullptr || (out == nullptr && max != 0)) return -1;
  return guard("get_segment_paths", -1, [&] {
    std::vector<mc::SegmentPathInfo> paths;
    const int rc = engine->engine.getSegmentPaths(segment_id, paths, local_addr, remote_addr);
    if (rc != 0) return rc;
    *count = paths.size();
    for (size_t i = 0; i < paths.size() && i < max; ++i) {
      mc_te_path_info_t& o = out[i];
      std::memset(&o, 0, sizeof(o));
      std::strncpy(o.local_device, paths[i].local_device.c_str(), sizeof(o.local_device) - 1);
      std::strncpy(o.remote_device, paths[i].remote_device.c_str(), sizeof(o.remote_device) - 1);
      o.rank = paths[i].rank;
      o.carries = paths[i].carries;
      o.healthy = paths[i].healthy;
      o.bytes = paths[i].bytes;
    }
    return 0;
  });
}

mc_te_batch_id_t mc_te_allocate_batch_id(mc_te_t* engine, size_t batch_size) {
  if (engine == nullptr) return MC_TE_INVALID_BATCH_ID;
  return guard("allocate_batch_id", mc_te_batch_id_t{MC_TE_INVALID_BATCH_ID},
               [&] { return engine->engine.allocateBatchID(batch_size); });
}

int mc_te_submit_transfer(mc_te_t* engine, mc_te_batch_id_t batch_id,
                          const mc_te_request_t* entries, size_t count) {
  if (engine == nullptr || (entries == nullptr && count != 0)) return -1;
  return guard("submit_transfer", -1, [&] {
    std::vector<mc::TransferRequest> reqs;
    if (!to_requests(entries, count, &reqs)) return -1;
    return engine->engine.submitTransfer(batch_id, reqs);
  });
}

int mc_te_get_transfer_status(mc_te_t* engine, mc_te_batch_id_t batch_id, size_t task_id,
                              mc_te_transfer_status_t* status) {
  if (engine == nullptr || status == nullptr) return -1;
  return guard("get_transfer_status", -1, [&] {
    mc::TransferStatus s{};
    const int rc = engine->engine.getTransferStatus(batch_id, task_id, s);
    if (rc == 0) {
      status->status = static_cast<mc_te_task_status_t>(s.s);
      status->transferred = s.transferred;
    }
    return rc;
  });
}

int mc_te_free_batch_id(mc_te_t* engine, mc_te_batch_id_t batch_id) {
  if (engine == nullptr) return -1;
  return guard("free_batch_id", -1, [&] { return engine->engine.freeBatchID(batch_id); });
}

int mc_te_submit_transfer_with_notify(mc_te_t* engine, mc_te_batch_id_t batch_id,
                                      const mc_te_request_t* entries, size_t count,
                                      const mc_te_notify_desc_t* notify) {
  mc::NotifyDesc desc;
  if (engine == nullptr || (entries == nullptr && count != 0) || !to_desc(notify, &desc)) {
    return -1;
  }
  return guard("submit_transfer_with_notify", -1, [&] {
    std::vector<mc::TransferRequest> reqs;
    if (!to_requests(entries, count, &reqs)) return -1;
    return engine->engine.submitTransferWithNotify(batch_id, reqs, desc);
  });
}

int mc_te_get_batch_notify_status(mc_te_t* engine, mc_te_batch_id_t batch_id) {
  if (engine == nullptr) return -1;
  return guard("get_batch_notify_status", -1,
               [&] { return engine->engine.getBatchNotifyStatus(batch_id); });
}

int mc_te_send_notify_by_name(mc_te_t* engine, const char* segment_name,
                              const mc_te_notify_desc_t* notify) {
  mc::NotifyDesc desc;
  if (engine == nullptr || segment_name == nullptr || !to_desc(notify, &desc)) return -1;
  return guard("send_notify_by_name", -1,
               [&] { return engine->engine.sendNotifyByName(segment_name, desc); });
}

int mc_te_send_notify_by_id(mc_te_t* engine, mc_te_segment_id_t segment_id,
                            const mc_te_notify_desc_t* notify) {
  mc::NotifyDesc desc;
  if (engine == nullptr || !to_desc(notify, &desc)) return -1;
  return guard("send_notify_by_id", -1,
               [&] { return engine->engine.sendNotifyByID(segment_id, desc); });
}

int mc_te_get_notifies(mc_te_t* engine, mc_te_received_notify_t** out, size_t* count) {
  if (engine == nullptr || out == nullptr || count == nullptr) return -1;
  *out = nullptr;
  *count = 0;
  return guard("get_notifies", -1, [&] {
    std::vector<mc::ReceivedNotify> got;
    const int rc = engine->engine.getNotifies(got);
    if (rc != 0 || got.empty()) return rc;
    auto* arr = static_cast<mc_te_received_notify_t*>(
        std::calloc(got.size(), sizeof(mc_te_received_notify_t)));
    if (arr == nullptr) return -9;
    for (size_t i = 0; i < got.size(); ++i) {
      mc_te_received_notify_t& o = arr[i];
      if (!copy_out(got[i].sender, &o.sender, &o.sender_len) ||
          !copy_out(got[i].notify.name, &o.name, &o.name_len) ||
          !copy_out(got[i].notify.notify_msg, &o.notify_msg, &o.notify_msg_len)) {
        mc_te_free_notifies(arr, got.size());
        return -9;
      }
    }
    *out = arr;
    *count = got.size();
    return 0;
  });
}

void mc_te_free_notifies(mc_te_received_notify_t* notifies, size_t count) {
  if (notifies == nullptr) return;
  for (size_t i = 0; i < count; ++i) {
    std::free(notifies[i].sender);
    std::free(notifies[i].name);
    std::free(notifies[i].notify_msg);
  }
  std::free(notifies);
}

int mc_te_get_local_ip_and_port(mc_te_t* engine, char* buf, size_t len) {
  if (engine == nullptr || buf == nullptr) return -1;
  return guard("get_local_ip_and_port", -1, [&] {
    const std::string s = engine->engine.getLocalIpAndPort();
    if (s.empty() || s.size() + 1 > len) return -1;
    std::memcpy(buf, s.c_str(), s.size() + 1);
    return 0;
  });
}

}  // extern "C"
