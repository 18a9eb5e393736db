// SPDX-License-Identifier: Apache-2.0
// libibverbs reached through dlopen/dlsym: the module never links rdma-core,
// so it loads (and reports "no RDMA devices") where rdma-core is absent.
#include "uct/ib/base/ib_verbs.h"

#include <dlfcn.h>

#include <map>
#include <mutex>

#include "config.h"
#ifdef HAVE_MLX5DV
#include <infiniband/mlx5dv.h>
#endif

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
int real_poll_cq(ibv_cq* cq, int n, ibv_wc* wc) {
  return cq->context->ops.poll_cq(cq, n, wc);
}
int real_req_notify_cq(ibv_cq* cq, int solicited) {
  return cq->context->ops.req_notify_cq(cq, solicited);
}

#ifdef HAVE_MLX5DV
// libmlx5.so.1's direct verbs, bound once by load_mlx5().
bool (*dv_is_supported)(ibv_device*) = nullptr;
int (*dv_init_obj)(mlx5dv_obj*, uint64_t) = nullptr;

bool real_mlx5_supported(ibv_device* d) {
  return dv_is_supported(d);
}

int real_mlx5_qp_info(ibv_qp* qp, Mlx5QpInfo* out) {
  mlx5dv_qp dv{};
  mlx5dv_obj obj{};
  obj.qp.in = qp;
  obj.qp.out = &dv;
  const int rc = dv_init_obj(&obj, MLX5DV_OBJ_QP);
  if (rc != 0) return rc;
  out->sq_buf = static_cast<uint8_t*>(dv.sq.buf);
  out->sq_wqe_cnt = dv.sq.wqe_cnt;
  out->sq_stride = dv.sq.stride;
  out->dbrec = reinterpret_cast<volatile uint32_t*>(dv.dbrec);
  out->bf_reg = static_cast<uint8_t*>(dv.bf.reg);
  out->bf_size = dv.bf.size;
  return 0;
}

int real_mlx5_cq_info(ibv_cq* cq, Mlx5CqInfo* out) {
  mlx5dv_cq dv{};
  mlx5dv_obj obj{};
  obj.cq.in = cq;
  obj.cq.out = &dv;
  const int rc = dv_init_obj(&obj, MLX5DV_OBJ_CQ);
  if (rc != 0) return rc;
  out->buf = static_cast<uint8_t*>(dv.buf);
  out->cqe_cnt = dv.cqe_cnt;
  out->cqe_size = dv.cqe_size;
  out->dbrec = reinterpret_cast<volatile uint32_t*>(dv.dbrec);
  out->cq_uar = static_cast<uint8_t*>(dv.cq_uar);
  out->cqn = dv.cqn;
  return 0;
}
#endif

// Binds the mlx5 direct verbs when libmlx5.so.1 is there (it is loaded by
// libibverbs itself on a machine with an mlx5 device).
void load_mlx5(VerbsOps* o) {
#ifdef HAVE_MLX5DV
  void* lib = dlopen("libmlx5.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    o->mlx5_why = "libmlx5.so.1 (rdma-core's mlx5 provider) is not installed";
    return;
  }
  dv_is_supported = reinterpret_cast<bool (*)(ibv_device*)>(dlsym(lib, "mlx5dv_is_supported"));
  dv_init_obj = reinterpret_cast<int (*)(mlx5dv_obj*, uint64_t)>(dlsym(lib, "mlx5dv_init_obj"));
  if (!dv_is_supported || !dv_init_obj) {
    o->mlx5_why = "libmlx5.so.1 lacks mlx5dv_is_supported or mlx5dv_init_obj";
    dlclose(lib);
    return;
  }
  o->mlx5_supported = real_mlx5_supported;
  o->mlx5_qp_info = real_mlx5_qp_info;
  o->mlx5_cq_info = real_mlx5_cq_info;
#else
  o->mlx5_why = "built without mlx5dv";
#endif
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
  const bool ok =
      bind(lib, "ibv_get_device_list", &o.get_device_list, w) &&
      bind(lib, "ibv_free_device_list", &o.free_device_list, w) &&
      bind(lib, "ibv_get_device_name", &o.get_device_name, w) &&
      bind(lib, "ibv_open_device", &o.open_device, w) &&
      bind(lib, "ibv_close_device", &o.close_device, w) &&
      bind(lib, "ibv_query_device", &o.query_device, w) &&
      bind(lib, "ibv_query_port", &o.query_port, w) &&
      bind(lib, "ibv_query_gid", &o.query_gid, w) && bind(lib, "ibv_alloc_pd", &o.alloc_pd, w) &&
      bind(lib, "ibv_dealloc_pd", &o.dealloc_pd, w) && bind(lib, "ibv_reg_mr", &o.reg_mr, w) &&
      bind(lib, "ibv_dereg_mr", &o.dereg_mr, w) &&
      bind(lib, "ibv_create_comp_channel", &o.create_comp_channel, w) &&
      bind(lib, "ibv_destroy_comp_channel", &o.destroy_comp_channel, w) &&
      bind(lib, "ibv_create_cq", &o.create_cq, w) &&
      bind(lib, "ibv_destroy_cq", &o.destroy_cq, w) &&
      bind(lib, "ibv_get_cq_event", &o.get_cq_event, w) &&
      bind(lib, "ibv_ack_cq_events", &o.ack_cq_events, w) &&
      bind(lib, "ibv_create_qp", &o.create_qp, w) && bind(lib, "ibv_modify_qp", &o.modify_qp, w) &&
      bind(lib, "ibv_destroy_qp", &o.destroy_qp, w);
  if (!ok) {
    dlclose(lib);
    return l;
  }
  // Optional: rdma-core before 34 has no dma-buf registration.
  o.reg_dmabuf_mr = reinterpret_cast<decltype(o.reg_dmabuf_mr)>(dlsym(lib, "ibv_reg_dmabuf_mr"));
  // Optional: rdma-core before 28 has no optional access flags.
  o.reg_mr_iova2 = reinterpret_cast<decltype(o.reg_mr_iova2)>(dlsym(lib, "ibv_reg_mr_iova2"));
  o.post_send = real_post_send;
  o.post_recv = real_post_recv;
  o.poll_cq = real_poll_cq;
  o.req_notify_cq = real_req_notify_cq;
  load_mlx5(&o);
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

ucs::Result<const VerbsOps*> verbs_ops_soft_library(const std::string& path,
                                                    const std::string& fabric, unsigned devices,
                                                    std::string* why) {
  static std::mutex lock;
  static std::map<std::string, SoftVerbsEntry> entries;  // libraries stay loaded
  SoftVerbsEntry entry = nullptr;
  {
    std::lock_guard guard(lock);
    auto it = entries.find(path);
    if (it == entries.end()) {
      void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (!lib) {
        const char* e = dlerror();
        if (why) {
          *why = "the soft provider (MC_IB_SOFT_LIBRARY=" + path +
                 ") does not load: " + (e ? e : "dlopen failed");
        }
        return ucs::Status::NoDevice;
      }
      void* sym = dlsym(lib, kSoftVerbsEntry);
      if (!sym) {
        if (why) *why = path + " has no " + kSoftVerbsEntry + ": not the soft provider";
        dlclose(lib);
        return ucs::Status::NoDevice;
      }
      it = entries.emplace(path, reinterpret_cast<SoftVerbsEntry>(sym)).first;
    }
    entry = it->second;
  }
  std::string reason;
  const VerbsOps* ops = entry(kVerbsOpsAbi, fabric.c_str(), devices, &reason);
  if (!ops) {
    if (why) *why = reason;
    return ucs::Status::NoDevice;
  }
  return ops;
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
