// SPDX-License-Identifier: Apache-2.0
// The C API (api/ucp_c.h): each opaque handle owns one C++ object; every
// entry point catches at the boundary so no exception reaches C.
#include "ucp/api/ucp_c.h"

#include <cstdlib>
#include <cstring>
#include <map>
#include <new>
#include <string>

#include "ucp/api/ucp.h"
#include "ucs/log/log.h"

struct mc_ucp_context {
  std::unique_ptr<mc::ucp::Context> impl;
};
struct mc_ucp_worker {
  std::unique_ptr<mc::ucp::Worker> impl;
};
struct mc_ucp_ep {
  std::unique_ptr<mc::ucp::Endpoint> impl;
};
struct mc_ucp_mem {
  std::unique_ptr<mc::ucp::MemHandle> impl;
};
struct mc_ucp_rkey {
  std::unique_ptr<mc::ucp::Rkey> impl;
};
struct mc_ucp_request {
  std::shared_ptr<mc::ucp::Request> impl;
};

namespace {

using mc::ucs::Result;
using mc::ucs::Status;
namespace ucp = mc::ucp;

// The C enum mirrors Status value for value.
static_assert(MC_UCP_OK == static_cast<int>(Status::Ok));
static_assert(MC_UCP_INPROGRESS == static_cast<int>(Status::InProgress));
static_assert(MC_UCP_ERR_NO_RESOURCE == static_cast<int>(Status::NoResource));
static_assert(MC_UCP_ERR_UNREACHABLE == static_cast<int>(Status::Unreachable));
static_assert(MC_UCP_ERR_INVALID_PARAM == static_cast<int>(Status::InvalidParam));
static_assert(MC_UCP_ERR_IO_ERROR == static_cast<int>(Status::IoError));
static_assert(MC_UCP_ERR_TIMEOUT == static_cast<int>(Status::Timeout));
static_assert(MC_UCP_ERR_CANCELED == static_cast<int>(Status::Canceled));
static_assert(MC_UCP_ERR_UNSUPPORTED == static_cast<int>(Status::Unsupported));
static_assert(MC_UCP_ERR_NO_MEMORY == static_cast<int>(Status::NoMemory));
static_assert(MC_UCP_ERR_NO_DEVICE == static_cast<int>(Status::NoDevice));
static_assert(MC_UCP_ERR_NO_ELEM == static_cast<int>(Status::NoElem));
static_assert(MC_UCP_ERR_BUSY == static_cast<int>(Status::Busy));
static_assert(MC_UCP_ERR_CONNECTION_RESET == static_cast<int>(Status::ConnectionReset));
static_assert(MC_UCP_ERR_EXISTS == static_cast<int>(Status::Exists));
static_assert(MC_UCP_ERR_MESSAGE_TRUNCATED == static_cast<int>(Status::MessageTruncated));
static_assert(MC_UCP_ERR_VERSION_MISMATCH == static_cast<int>(Status::VersionMismatch));
static_assert(MC_UCP_ERR_BAD_DATA == static_cast<int>(Status::BadData));
static_assert(MC_UCP_ERR_REJECTED == static_cast<int>(Status::Rejected));

mc_ucp_status_t to_c(Status s) {
  return static_cast<mc_ucp_status_t>(static_cast<int>(s));
}

// Runs `fn` (returning Status) and turns an escaping exception into a status.
template <typename Fn>
mc_ucp_status_t guarded(const char* what, Fn&& fn) noexcept {
  try {
    return to_c(fn());
  } catch (const std::bad_alloc&) {
    LOG(ERROR) << what << ": out of memory";
    return MC_UCP_ERR_NO_MEMORY;
  } catch (const std::exception& e) {
    LOG(ERROR) << what << ": unexpected exception: " << e.what();
    return MC_UCP_ERR_IO_ERROR;
  } catch (...) {
    LOG(ERROR) << what << ": unexpected exception";
    return MC_UCP_ERR_IO_ERROR;
  }
}

// Destroys a handle; a destructor that throws is logged, never propagated.
template <typename T>
void destroy(const char* what, T* handle) noexcept {
  try {
    delete handle;
  } catch (...) {
    LOG(ERROR) << what << ": exception while destroying";
  }
}

ucp::RequestParams to_params(const mc_ucp_request_param_t* param) {
  ucp::RequestParams out;
  if (param == nullptr) return out;
  if (param->callback != nullptr) {
    mc_ucp_send_cb_t cb = param->callback;
    void* user_data = param->user_data;
    out.callback = [cb, user_data](Status s) { cb(to_c(s), user_data); };
  }
  if (param->memh != nullptr) out.memh = param->memh->impl.get();
  if (param->timeout_ms > 0) {
    out.timeout = std::chrono::milliseconds(param->timeout_ms);
  } else if (param->timeout_ms < 0) {
    out.timeout = mc::ucs::config::Duration::max();
  }
  return out;
}

// Hands a started request to C: Ok when it already completed successfully,
// its error when it already failed, InProgress with a handle otherwise.
Status hand_out(Result<std::shared_ptr<ucp::Request>> r, mc_ucp_request_t** request_p) {
  MC_RETURN_IF_ERROR(r);
  std::shared_ptr<ucp::Request>& req = *r;
  if (req->completed()) return req->status();
  *request_p = new mc_ucp_request{std::move(req)};
  return Status::InProgress;
}

// Copies `bytes` into a malloc'd buffer for C.
Status to_malloc(const std::vector<uint8_t>& bytes, void** out_p, size_t* length_p) {
  void* buf = std::malloc(bytes.empty() ? 1 : bytes.size());
  if (buf == nullptr) return Status::NoMemory;
  if (!bytes.empty()) std::memcpy(buf, bytes.data(), bytes.size());
  *out_p = buf;
  *length_p = bytes.size();
  return Status::Ok;
}

}  // namespace

extern "C" {

const char* mc_ucp_status_string(mc_ucp_status_t status) {
  return mc::ucs::status_string(static_cast<Status>(static_cast<int>(status)));
}

mc_ucp_status_t mc_ucp_context_create(const char* const* names, const char* const* values,
                                      size_t count, mc_ucp_context_t** context_p) {
  return guarded("mc_ucp_context_create", [&]() -> Status {
    if (context_p == nullptr) return Status::InvalidParam;
    *context_p = nullptr;
    if (count > 0 && (names == nullptr || values == nullptr)) return Status::InvalidParam;
    std::string error;
    Result<mc::ucs::config::Sources> process = mc::ucs::config::Sources::from_process(&error);
    if (!process.ok()) {
      LOG(ERROR) << "mc_ucp_context_create: " << error;
      return process.status();
    }
    // The overrides join the process's settings as if set in the environment.
    std::map<std::string, std::string> env;
    for (const auto& [name, value] : process->all()) env[name] = value.value;
    for (size_t i = 0; i < count; ++i) {
      if (names[i] == nullptr || values[i] == nullptr) return Status::InvalidParam;
      std::string name = names[i];
      if (name.rfind("MC_", 0) != 0) name = "MC_" + name;
      env[name] = values[i];
    }
    MC_ASSIGN_OR_RETURN(mc::ucs::config::Sources sources,
                        mc::ucs::config::Sources::from(env, {}, &error));
    ucp::ContextParams params;
    params.sources = &sources;
    MC_ASSIGN_OR_RETURN(std::unique_ptr<ucp::Context> ctx, ucp::Context::create(params));
    *context_p = new mc_ucp_context{std::move(ctx)};
    return Status::Ok;
  });
}

void mc_ucp_context_destroy(mc_ucp_context_t* context) {
  destroy("mc_ucp_context_destroy", context);
}

mc_ucp_status_t mc_ucp_worker_create(mc_ucp_context_t* context, mc_ucp_worker_t** worker_p) {
  return guarded("mc_ucp_worker_create", [&]() -> Status {
    if (worker_p == nullptr) return Status::InvalidParam;
    *worker_p = nullptr;
    if (context == nullptr) return Status::InvalidParam;
    MC_ASSIGN_OR_RETURN(std::unique_ptr<ucp::Worker> w, ucp::Worker::create(*context->impl));
    *worker_p = new mc_ucp_worker{std::move(w)};
    return Status::Ok;
  });
}

void mc_ucp_worker_destroy(mc_ucp_worker_t* worker) {
  destroy("mc_ucp_worker_destroy", worker);
}

unsigned mc_ucp_worker_progress(mc_ucp_worker_t* worker) {
  if (worker == nullptr) return 0;
  unsigned n = 0;
  guarded("mc_ucp_worker_progress", [&]() {
    n = worker->impl->progress();
    return Status::Ok;
  });
  return n;
}

int mc_ucp_worker_event_fd(mc_ucp_worker_t* worker) {
  return worker == nullptr ? -1 : worker->impl->event_fd();
}

mc_ucp_status_t mc_ucp_worker_arm(mc_ucp_worker_t* worker) {
  return guarded("mc_ucp_worker_arm", [&]() -> Status {
    if (worker == nullptr) return Status::InvalidParam;
    return worker->impl->arm();
  });
}

mc_ucp_status_t mc_ucp_worker_wait(mc_ucp_worker_t* worker, int64_t timeout_ms) {
  return guarded("mc_ucp_worker_wait", [&]() -> Status {
    if (worker == nullptr) return Status::InvalidParam;
    return worker->impl->wait(timeout_ms < 0 ? mc::ucs::config::Duration::max()
                                             : std::chrono::milliseconds(timeout_ms));
  });
}

void mc_ucp_worker_signal(mc_ucp_worker_t* worker) {
  if (worker != nullptr) worker->impl->signal();
}

mc_ucp_status_t mc_ucp_worker_address(mc_ucp_worker_t* worker, void** address_p, size_t* length_p) {
  return guarded("mc_ucp_worker_address", [&]() -> Status {
    if (worker == nullptr || address_p == nullptr || length_p == nullptr) {
      return Status::InvalidParam;
    }
    return to_malloc(worker->impl->address(), address_p, length_p);
  });
}

void mc_ucp_worker_address_release(void* address) {
  std::free(address);
}

mc_ucp_status_t mc_ucp_worker_set_am_handler(mc_ucp_worker_t* worker, uint16_t id,
                                             mc_ucp_am_cb_t callback, void* arg) {
  return guarded("mc_ucp_worker_set_am_handler", [&]() -> Status {
    if (worker == nullptr) return Status::InvalidParam;
    ucp::AmCallback cb;
    if (callback != nullptr) {
      cb = [callback, arg](const void* data, size_t length) { callback(arg, data, length); };
    }
    worker->impl->set_am_handler(id, std::move(cb));
    return Status::Ok;
  });
}

mc_ucp_status_t mc_ucp_worker_flush(mc_ucp_worker_t* worker, const mc_ucp_request_param_t* param,
                                    mc_ucp_request_t** request_p) {
  return guarded("mc_ucp_worker_flush", [&]() -> Status {
    if (request_p == nullptr) return Status::InvalidParam;
    *request_p = nullptr;
    if (worker == nullptr) return Status::InvalidParam;
    return hand_out(worker->impl->flush(to_params(param)), request_p);
  });
}

mc_ucp_status_t mc_ucp_ep_create(mc_ucp_worker_t* worker, const void* address, size_t length,
                                 mc_ucp_ep_t** ep_p) {
  return guarded("mc_ucp_ep_create", [&]() -> Status {
    if (ep_p == nullptr) return Status::InvalidParam;
    *ep_p = nullptr;
    if (worker == nullptr || address == nullptr || length == 0) return Status::InvalidParam;
    std::span<const uint8_t> bytes(static_cast<const uint8_t*>(address), length);
    MC_ASSIGN_OR_RETURN(std::unique_ptr<ucp::Endpoint> ep, worker->impl->ep_create(bytes));
    *ep_p = new mc_ucp_ep{std::move(ep)};
    return Status::Ok;
  });
}

mc_ucp_status_t mc_ucp_ep_close_nbx(mc_ucp_ep_t* ep, mc_ucp_close_mode_t mode,
                                    const mc_ucp_request_param_t* param,
                                    mc_ucp_request_t** request_p) {
  return guarded("mc_ucp_ep_close_nbx", [&]() -> Status {
    if (request_p == nullptr) return Status::InvalidParam;
    *request_p = nullptr;
    if (ep == nullptr) return Status::InvalidParam;
    const ucp::CloseMode m =
        mode == MC_UCP_CLOSE_FORCE ? ucp::CloseMode::Force : ucp::CloseMode::Flush;
    return hand_out(ep->impl->close(m, to_params(param)), request_p);
  });
}

void mc_ucp_ep_destroy(mc_ucp_ep_t* ep) {
  destroy("mc_ucp_ep_destroy", ep);
}

mc_ucp_status_t mc_ucp_ep_flush(mc_ucp_ep_t* ep, const mc_ucp_request_param_t* param,
                                mc_ucp_request_t** request_p) {
  return guarded("mc_ucp_ep_flush", [&]() -> Status {
    if (request_p == nullptr) return Status::InvalidParam;
    *request_p = nullptr;
    if (ep == nullptr) return Status::InvalidParam;
    return hand_out(ep->impl->flush(to_params(param)), request_p);
  });
}

mc_ucp_status_t mc_ucp_mem_map(mc_ucp_context_t* context, void* address, size_t length,
                               mc_ucp_mem_t** memh_p) {
  return guarded("mc_ucp_mem_map", [&]() -> Status {
    if (memh_p == nullptr) return Status::InvalidParam;
    *memh_p = nullptr;
    if (context == nullptr) return Status::InvalidParam;
    MC_ASSIGN_OR_RETURN(std::unique_ptr<ucp::MemHandle> mh,
                        ucp::MemHandle::map(*context->impl, address, length));
    *memh_p = new mc_ucp_mem{std::move(mh)};
    return Status::Ok;
  });
}

void mc_ucp_mem_unmap(mc_ucp_mem_t* memh) {
  destroy("mc_ucp_mem_unmap", memh);
}

mc_ucp_status_t mc_ucp_rkey_pack(const mc_ucp_mem_t* memh, void** rkey_p, size_t* length_p) {
  return guarded("mc_ucp_rkey_pack", [&]() -> Status {
    if (memh == nullptr || rkey_p == nullptr || length_p == nullptr) return Status::InvalidParam;
    MC_ASSIGN_OR_RETURN(std::vector<uint8_t> packed, memh->impl->rkey_pack());
    return to_malloc(packed, rkey_p, length_p);
  });
}

void mc_ucp_rkey_buffer_release(void* rkey_buffer) {
  std::free(rkey_buffer);
}

mc_ucp_status_t mc_ucp_ep_rkey_unpack(mc_ucp_ep_t* ep, const void* rkey_buffer, size_t length,
                                      mc_ucp_rkey_t** rkey_p) {
  return guarded("mc_ucp_ep_rkey_unpack", [&]() -> Status {
    if (rkey_p == nullptr) return Status::InvalidParam;
    *rkey_p = nullptr;
    if (ep == nullptr || rkey_buffer == nullptr) return Status::InvalidParam;
    std::span<const uint8_t> bytes(static_cast<const uint8_t*>(rkey_buffer), length);
    MC_ASSIGN_OR_RETURN(std::unique_ptr<ucp::Rkey> rkey, ep->impl->rkey_unpack(bytes));
    *rkey_p = new mc_ucp_rkey{std::move(rkey)};
    return Status::Ok;
  });
}

void mc_ucp_rkey_destroy(mc_ucp_rkey_t* rkey) {
  destroy("mc_ucp_rkey_destroy", rkey);
}

mc_ucp_status_t mc_ucp_put_nbx(mc_ucp_ep_t* ep, const void* buffer, size_t length,
                               uint64_t remote_addr, const mc_ucp_rkey_t* rkey,
                               const mc_ucp_request_param_t* param, mc_ucp_request_t** request_p) {
  return guarded("mc_ucp_put_nbx", [&]() -> Status {
    if (request_p == nullptr) return Status::InvalidParam;
    *request_p = nullptr;
    if (ep == nullptr || rkey == nullptr || (buffer == nullptr && length > 0)) {
      return Status::InvalidParam;
    }
    return hand_out(ep->impl->put_nbx(buffer, length, remote_addr, *rkey->impl, to_params(param)),
                    request_p);
  });
}

mc_ucp_status_t mc_ucp_get_nbx(mc_ucp_ep_t* ep, void* buffer, size_t length, uint64_t remote_addr,
                               const mc_ucp_rkey_t* rkey, const mc_ucp_request_param_t* param,
                               mc_ucp_request_t** request_p) {
  return guarded("mc_ucp_get_nbx", [&]() -> Status {
    if (request_p == nullptr) return Status::InvalidParam;
    *request_p = nullptr;
    if (ep == nullptr || rkey == nullptr || (buffer == nullptr && length > 0)) {
      return Status::InvalidParam;
    }
    return hand_out(ep->impl->get_nbx(buffer, length, remote_addr, *rkey->impl, to_params(param)),
                    request_p);
  });
}

mc_ucp_status_t mc_ucp_am_send_nbx(mc_ucp_ep_t* ep, uint16_t id, const void* buffer, size_t length,
                                   const mc_ucp_request_param_t* param,
                                   mc_ucp_request_t** request_p) {
  return guarded("mc_ucp_am_send_nbx", [&]() -> Status {
    if (request_p == nullptr) return Status::InvalidParam;
    *request_p = nullptr;
    if (ep == nullptr || (buffer == nullptr && length > 0)) return Status::InvalidParam;
    return hand_out(ep->impl->am_send_nbx(id, buffer, length, to_params(param)), request_p);
  });
}

mc_ucp_status_t mc_ucp_request_test(mc_ucp_request_t* request) {
  return guarded("mc_ucp_request_test", [&]() -> Status {
    if (request == nullptr) return Status::InvalidParam;
    return request->impl->test();
  });
}

mc_ucp_status_t mc_ucp_request_wait(mc_ucp_request_t* request) {
  return guarded("mc_ucp_request_wait", [&]() -> Status {
    if (request == nullptr) return Status::InvalidParam;
    return request->impl->wait();
  });
}

void mc_ucp_request_cancel(mc_ucp_request_t* request) {
  if (request == nullptr) return;
  guarded("mc_ucp_request_cancel", [&]() {
    request->impl->cancel();
    return Status::Ok;
  });
}

void mc_ucp_request_free(mc_ucp_request_t* request) {
  destroy("mc_ucp_request_free", request);
}

}  // extern "C"
