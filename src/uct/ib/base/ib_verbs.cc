// SPDX-License-Identifier: Apache-2.0
// libibverbs reached through dlopen/dlsym: the module never links rdma-core,
// so it loads (and reports "no RDMA devices") where rdma-core is absent.
#include "uct/ib/base/ib_verbs.h"

#include <dlfcn.h>

#include <mutex>

namespace mc::uct::ib {

namespace {

// The inline verbs of verbs.h dispatch through the context's ops; they use
// no libibverbs symbol, so calling them here links nothing.
int real_post_send(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad) {
  return qp->context->ops.post_send(qp, wr, bad);
}
int real_post_recv(ibv_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** bad) {
  return qp->context->ops.post_recv(qp, wr, bad);
}
int real_poll_cq(ibv_cq* cq, int n, ibv_wc* wc) { return cq->context->ops.poll_cq(cq, n, wc); }
int real_req_notify_cq(ibv_cq* cq, int solicited) {
  return cq->context->ops.req_notify_cq(cq, solicited);
}

struct Loaded {
  VerbsOps ops;
  std::string why;  // empty when loaded
};

template <typename Fn>
bool bind(void* lib, const char* symbol, Fn* out, std::string* why) {
  void* p = dlsym(lib, symbol);
  if (!p) {
    *why = std::string("libibverbs.so.1 lacks symbol ") + symbol;
    return false;
  }
  *out = reinterpret_cast<Fn>(p);
  return true;
}

Loaded load() {
  Loaded l;
  void* lib = dlopen("libibverbs.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* e = dlerror();
    l.why = std::string("rdma-core is not installed: ") + (e ? e : "dlopen failed");
    return l;
  }
  VerbsOps& o = l.ops;
  o.provider = "verbs";
  std::string* w = &l.why;
  const bool ok = bind(lib, "ibv_get_device_list", &o.get_device_list, w) &&
                  bind(lib, "ibv_free_device_list", &o.free_device_list, w) &&
                  bind(lib, "ibv_get_device_name", &o.get_device_name, w) &&
                  bind(lib, "ibv_open_device", &o.open_device, w) &&
                  bind(lib, "ibv_close_device", &o.close_device, w) &&
                  bind(lib, "ibv_query_device", &o.query_device, w) &&
                  bind(lib, "ibv_query_port", &o.query_port, w) &&
                  bind(lib, "ibv_query_gid", &o.query_gid, w) &&
                  bind(lib, "ibv_alloc_pd", &o.alloc_pd, w) &&
                  bind(lib, "ibv_dealloc_pd", &o.dealloc_pd, w) &&
                  bind(lib, "ibv_reg_mr", &o.reg_mr, w) &&
                  bind(lib, "ibv_dereg_mr", &o.dereg_mr, w) &&
                  bind(lib, "ibv_create_comp_channel", &o.create_comp_channel, w) &&
                  bind(lib, "ibv_destroy_comp_channel", &o.destroy_comp_channel, w) &&
                  bind(lib, "ibv_create_cq", &o.create_cq, w) &&
                  bind(lib, "ibv_destroy_cq", &o.destroy_cq, w) &&
                  bind(lib, "ibv_get_cq_event", &o.get_cq_event, w) &&
                  bind(lib, "ibv_ack_cq_events", &o.ack_cq_events, w) &&
                  bind(lib, "ibv_create_qp", &o.create_qp, w) &&
                  bind(lib, "ibv_modify_qp", &o.modify_qp, w) &&
                  bind(lib, "ibv_destroy_qp", &o.destroy_qp, w);
  if (!ok) {
    dlclose(lib);
    return l;
  }
  o.post_send = real_post_send;
  o.post_recv = real_post_recv;
  o.poll_cq = real_poll_cq;
  o.req_notify_cq = real_req_notify_cq;
  return l;  // the library stays loaded for the life of the process
}

}  // namespace

ucs::Result<const VerbsOps*> verbs_ops_libibverbs(std::string* why) {
  static const Loaded loaded = load();
  if (!loaded.why.empty()) {
    if (why) *why = loaded.why;
    return ucs::Status::NoDevice;
  }
  return &loaded.ops;
}

const char* wc_status_string(ibv_wc_status status) {
  switch (status) {
    case IBV_WC_SUCCESS: return "success";
    case IBV_WC_LOC_LEN_ERR: return "local length error";
    case IBV_WC_LOC_QP_OP_ERR: return "local QP operation error";
    case IBV_WC_LOC_PROT_ERR: return "local protection error";
    case IBV_WC_WR_FLUSH_ERR: return "work request flushed";
    case IBV_WC_REM_INV_REQ_ERR: return "remote invalid request";
    case IBV_WC_REM_ACCESS_ERR: return "remote access error";
    case IBV_WC_REM_OP_ERR: return "remote operation error";
    case IBV_WC_RETRY_EXC_ERR: return "transport retry counter exceeded";
    case IBV_WC_RNR_RETRY_EXC_ERR: return "RNR retry counter exceeded";
    case IBV_WC_FATAL_ERR: return "fatal error";
    default: return "completion error";
  }
}

}  // namespace mc::uct::ib
