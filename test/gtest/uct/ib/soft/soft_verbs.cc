// SPDX-License-Identifier: Apache-2.0
// The soft provider's control path: devices, ports, GIDs, PDs, MRs, CQs and
// QPs with the RESET -> INIT -> RTR -> RTS state machine of the IB spec.
#include "uct/ib/soft/soft_verbs.h"

#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>

#include "uct/ib/soft/soft_objects.h"

namespace mc::uct::ib::soft {

Provider& provider() {
  static Provider p;
  return p;
}

namespace {

uint64_t node_guid(uint32_t dev) {
  return std::hash<std::string>{}(provider().fabric->name()) * 31 + 0x6d63000000000000ull + dev;
}

ibv_device** get_device_list(int* num) {
  Provider& p = provider();
  auto** list = new ibv_device*[p.devices + 1];
  for (unsigned i = 0; i < p.devices; ++i) list[i] = &p.device_storage[i].dev;
  list[p.devices] = nullptr;
  if (num) *num = static_cast<int>(p.devices);
  return list;
}

void free_device_list(ibv_device** list) {
  delete[] list;
}

const char* get_device_name(ibv_device* d) {
  return d->name;
}

ibv_context* open_device(ibv_device* d) {
  auto* c = new SoftContext{};
  c->ctx.device = d;
  c->ctx.async_fd = -1;
  c->ctx.num_comp_vectors = 1;
  c->dev = reinterpret_cast<SoftDevice*>(d)->index;
  return &c->ctx;
}

int close_device(ibv_context* ctx) {
  delete reinterpret_cast<SoftContext*>(ctx);
  return 0;
}

uint32_t dev_of(ibv_context* ctx) {
  return reinterpret_cast<SoftContext*>(ctx)->dev;
}

int query_device(ibv_context* ctx, ibv_device_attr* a) {
  *a = ibv_device_attr{};
  std::snprintf(a->fw_ver, sizeof(a->fw_ver), "mc-soft-1");
  a->node_guid = node_guid(dev_of(ctx));
  a->max_mr_size = uint64_t{1} << 40;
  a->max_qp = kMaxQp;
  a->max_qp_wr = kMaxWr;
  a->max_sge = kMaxSge;
  a->max_cq = 1024;
  a->max_cqe = kMaxCqe;
  a->max_mr = kMaxMr;
  a->max_pd = 1024;
  a->max_qp_rd_atom = 16;
  a->max_qp_init_rd_atom = 16;
  a->phys_port_cnt = 1;
  return 0;
}

int query_port(ibv_context* ctx, uint8_t port, ibv_port_attr* a) {
  if (port != 1) return EINVAL;
  *a = ibv_port_attr{};
  Provider& p = provider();
  bool failed;
  {
    Fabric::Guard g(p.fabric);
    failed = p.fabric->device_failed(dev_of(ctx));
  }
  a->state = failed ? IBV_PORT_DOWN : IBV_PORT_ACTIVE;
  a->max_mtu = IBV_MTU_4096;
  a->active_mtu = IBV_MTU_4096;
  a->gid_tbl_len = 4;
  a->pkey_tbl_len = 1;
  a->max_msg_sz = 1u << 30;  // RDMA; a SEND is limited to kMsgMax
  a->link_layer = IBV_LINK_LAYER_ETHERNET;
  a->active_speed = 32;  // EDR lane: 25.78125 Gb/s
  a->active_width = 2;   // 4x
  return 0;
}

// GIDs 0 and 1: link-local (RoCE v1 / v2); 2 and 3: ::ffff:127.0.<dev>.1.
int query_gid(ibv_context* ctx, uint8_t port, int index, ibv_gid* gid) {
  if (port != 1 || index < 0 || index > 3) return EINVAL;
  *gid = ibv_gid{};
  const uint32_t dev = dev_of(ctx);
  if (index < 2) {
    gid->raw[0] = 0xfe;
    gid->raw[1] = 0x80;
    const uint64_t guid = node_guid(dev);
    std::memcpy(gid->raw + 8, &guid, 8);
  } else {
    gid->raw[10] = gid->raw[11] = 0xff;
    gid->raw[12] = 127;
    gid->raw[14] = static_cast<uint8_t>(dev);
    gid->raw[15] = 1;
  }
  return 0;
}

ibv_pd* alloc_pd(ibv_context* ctx) {
  auto* pd = new ibv_pd{};
  pd->context = ctx;
  return pd;
}

int dealloc_pd(ibv_pd* pd) {
  delete pd;
  return 0;
}

// Whether every page of the range is mapped (mincore fails with ENOMEM on
// an unmapped one), as a NIC's registration pins each page.
bool mapped(void* addr, size_t length) {
  const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t start = reinterpret_cast<uintptr_t>(addr) & ~(page - 1);
  const uintptr_t end = reinterpret_cast<uintptr_t>(addr) + length;
  if (end < start) return false;
  std::vector<unsigned char> vec((end - start + page - 1) / page);
  return mincore(reinterpret_cast<void*>(start), end - start, vec.data()) == 0;
}

// An MR; a dma-buf MR also owns the provider's mapping of the buffer.
struct SoftMr {
  ibv_mr mr;
  void* map = nullptr;
  size_t map_length = 0;
};

// As the verbs spec: remote write needs local write.
bool access_valid(int access) {
  return !(access & IBV_ACCESS_REMOTE_WRITE) || (access & IBV_ACCESS_LOCAL_WRITE);
}

// Makes the MR of `length` bytes named from `iova` on, whose bytes are at
// `base` in this process; ENOMEM when the fabric has no slot left.
SoftMr* mr_make(ibv_pd* pd, uint64_t iova, size_t length, int access, uint64_t base) {
  Provider& p = provider();
  Fabric::Guard g(p.fabric);
  MrSlot* slot = p.fabric->mr_alloc();
  if (!slot) {
    errno = ENOMEM;
    return nullptr;
  }
  slot->dev = dev_of(pd->context);
  slot->access = static_cast<uint32_t>(access);
  slot->addr = iova;
  slot->length = length;
  slot->base = base;
  auto* mr = new SoftMr{};
  mr->mr.context = pd->context;
  mr->mr.pd = pd;
  mr->mr.addr = reinterpret_cast<void*>(iova);
  mr->mr.length = length;
  mr->mr.lkey = mr->mr.rkey = slot->key;
  return mr;
}

ibv_mr* reg_mr(ibv_pd* pd, void* addr, size_t length, int access) {
  if (!addr || length == 0 || !access_valid(access)) {
    errno = EINVAL;
    return nullptr;
  }
  if (!mapped(addr, length)) {
    errno = EFAULT;  // what pinning an unmapped page gives
    return nullptr;
  }
  const auto a = reinterpret_cast<uintptr_t>(addr);
  SoftMr* mr = mr_make(pd, a, length, access, a);
  return mr ? &mr->mr : nullptr;
}

// As rdma-core: the optional flags (relaxed ordering) are kept in the MR's
// access, where tests read them; the soft device honours every order anyway.
ibv_mr* reg_mr_iova2(ibv_pd* pd, void* addr, size_t length, uint64_t iova, unsigned int access) {
  if (iova != reinterpret_cast<uintptr_t>(addr)) {
    errno = EINVAL;  // the soft provider names MRs by their address only
    return nullptr;
  }
  return reg_mr(pd, addr, length, static_cast<int>(access));
}

// A dma-buf (for tests: any file, e.g. a memfd standing for GPU memory) is
// mapped shared from the page holding `offset`, so that RDMA through the MR
// touches the exporter's pages, as a NIC's DMA does; the fd may be closed
// after registration. EINVAL when the range lies beyond the buffer.
ibv_mr* reg_dmabuf_mr(ibv_pd* pd, uint64_t offset, size_t length, uint64_t iova, int fd,
                      int access) {
  struct stat st {};
  if (fstat(fd, &st) != 0) return nullptr;  // EBADF
  if (length == 0 || iova == 0 || !access_valid(access) ||
      offset > static_cast<uint64_t>(st.st_size) ||
      length > static_cast<uint64_t>(st.st_size) - offset) {
    errno = EINVAL;
    return nullptr;
  }
  const auto page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  const uint64_t skip = offset & (page - 1);
  void* map = mmap(nullptr, skip + length, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
                   static_cast<off_t>(offset - skip));
  if (map == MAP_FAILED) return nullptr;  // errno from mmap
  SoftMr* mr = mr_make(pd, iova, length, access, reinterpret_cast<uintptr_t>(map) + skip);
  if (!mr) {
    munmap(map, skip + length);
    errno = ENOMEM;
    return nullptr;
  }
  mr->map = map;
  mr->map_length = skip + length;
  return &mr->mr;
}

int dereg_mr(ibv_mr* m) {
  Provider& p = provider();
  {
    Fabric::Guard g(p.fabric);
    if (MrSlot* slot = p.fabric->mr_find(m->lkey)) slot->key = 0;
  }
  auto* mr = reinterpret_cast<SoftMr*>(m);
  if (mr->map) munmap(mr->map, mr->map_length);
  delete mr;
  return 0;
}

// A completion channel is an eventfd; the device thread makes sure that
// completions of its CQs happen while the process sleeps on it.
ibv_comp_channel* create_comp_channel(ibv_context* ctx) {
  const int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (fd < 0) return nullptr;
  auto* c = new SoftChannel{};
  c->ch.context = ctx;
  c->ch.fd = fd;
  Provider& p = provider();
  std::lock_guard guard(p.lock);
  start_engine();
  return &c->ch;
}

int destroy_comp_channel(ibv_comp_channel* ch) {
  Provider& p = provider();
  std::lock_guard guard(p.lock);
  close(ch->fd);
  delete reinterpret_cast<SoftChannel*>(ch);
  return 0;
}

int get_cq_event(ibv_comp_channel* ch, ibv_cq** cq, void** cq_context) {
  Provider& p = provider();
  std::lock_guard guard(p.lock);
  auto* c = reinterpret_cast<SoftChannel*>(ch);
  if (c->events.empty()) {
    errno = EAGAIN;
    return -1;
  }
  *cq = c->events.front();
  c->events.pop_front();
  if (cq_context) *cq_context = (*cq)->cq_context;
  if (c->events.empty()) {
    uint64_t n;
    (void)!read(ch->fd, &n, sizeof(n));
  }
  return 0;
}

void ack_cq_events(ibv_cq*, unsigned) {}

int req_notify_cq(ibv_cq* cq, int) {
  Provider& p = provider();
  std::lock_guard guard(p.lock);
  auto* c = reinterpret_cast<SoftCq*>(cq);
  if (!c->channel) return EINVAL;
  c->armed = true;
  return 0;
}

ibv_cq* create_cq(ibv_context* ctx, int cqe, void* cq_context, ibv_comp_channel* ch, int) {
  if (cqe <= 0 || cqe > kMaxCqe) {
    errno = EINVAL;
    return nullptr;
  }
  auto* c = new SoftCq{};
  c->cq.context = ctx;
  c->cq.cqe = cqe;
  c->cq.cq_context = cq_context;
  c->cq.channel = ch;
  c->channel = reinterpret_cast<SoftChannel*>(ch);
  return &c->cq;
}

int destroy_cq(ibv_cq* cq) {
  Provider& p = provider();
  std::lock_guard guard(p.lock);
  for (SoftQp* q : p.qps) {
    if (q->qp.send_cq == cq || q->qp.recv_cq == cq) return EBUSY;
  }
  auto* c = reinterpret_cast<SoftCq*>(cq);
  if (c->channel) std::erase(c->channel->events, cq);
  delete c;
  return 0;
}

ibv_qp* create_qp(ibv_pd* pd, ibv_qp_init_attr* attr) {
  const ibv_qp_cap& cap = attr->cap;
  if (attr->qp_type != IBV_QPT_RC || !attr->send_cq || !attr->recv_cq || attr->srq ||
      cap.max_send_wr > kMaxWr || cap.max_recv_wr > kMaxWr || cap.max_send_sge > kMaxSge ||
      cap.max_recv_sge > kMaxSge || cap.max_inline_data > kMaxInline) {
    errno = EINVAL;
    return nullptr;
  }
  Provider& p = provider();
  std::lock_guard guard(p.lock);
  Fabric::Guard g(p.fabric);
  QpSlot* slot = p.fabric->qp_alloc();
  if (!slot) {
    errno = ENOMEM;
    return nullptr;
  }
  auto* q = new SoftQp{};
  q->dev = dev_of(pd->context);
  q->owner = getpid();
  slot->dev = q->dev;
  slot->state = IBV_QPS_RESET;
  q->cap = cap;
  q->sig_all = attr->sq_sig_all != 0;
  q->qp.context = pd->context;
  q->qp.pd = pd;
  q->qp.send_cq = attr->send_cq;
  q->qp.recv_cq = attr->recv_cq;
  q->qp.qp_context = attr->qp_context;
  q->qp.qp_num = slot->qpn;
  q->qp.qp_type = IBV_QPT_RC;
  q->qp.state = IBV_QPS_RESET;
  p.qps.push_back(q);
  return &q->qp;
}

// The attributes each transition needs (IB spec, table of QP transitions).
bool transition_ok(int from, int to, int mask) {
  constexpr int kInit = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
  constexpr int kRtr = IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                       IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
  constexpr int kRts = IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                       IBV_QP_MAX_QP_RD_ATOMIC;
  if (to == IBV_QPS_RESET || to == IBV_QPS_ERR) return true;
  if (from == IBV_QPS_RESET && to == IBV_QPS_INIT) return (mask & kInit) == kInit;
  if (from == IBV_QPS_INIT && to == IBV_QPS_RTR) return (mask & kRtr) == kRtr;
  if (from == IBV_QPS_RTR && to == IBV_QPS_RTS) return (mask & kRts) == kRts;
  return false;
}

int modify_qp(ibv_qp* qp, ibv_qp_attr* attr, int mask) {
  if (!(mask & IBV_QP_STATE)) return EINVAL;
  Provider& p = provider();
  std::lock_guard guard(p.lock);
  Fabric::Guard g(p.fabric);
  QpSlot* slot = p.fabric->qp_find(qp->qp_num);
  if (!slot) return EINVAL;
  const int to = attr->qp_state;
  if (!transition_ok(static_cast<int>(slot->state), to, mask)) return EINVAL;
  if (to == IBV_QPS_INIT && attr->port_num != 1) return EINVAL;
  // RoCE: every address vector carries a GRH.
  if (to == IBV_QPS_RTR && !attr->ah_attr.is_global) return EINVAL;
  if (to == IBV_QPS_RTR) slot->dest_qpn = attr->dest_qp_num;
  if (to == IBV_QPS_RESET) {
    reinterpret_cast<SoftQp*>(qp)->sq.clear();
    reinterpret_cast<SoftQp*>(qp)->rq.clear();
    slot->head = slot->tail = 0;
  }
  slot->state = static_cast<uint32_t>(to);
  qp->state = static_cast<ibv_qp_state>(to);
  return 0;
}

int destroy_qp(ibv_qp* qp) {
  Provider& p = provider();
  std::lock_guard guard(p.lock);
  {
    Fabric::Guard g(p.fabric);
    if (QpSlot* slot = p.fabric->qp_find(qp->qp_num)) slot->qpn = 0;
  }
  auto* q = reinterpret_cast<SoftQp*>(qp);
  std::erase(p.qps, q);
  delete q;
  return 0;
}

VerbsOps make_ops() {
  VerbsOps o;
  o.provider = "soft";
  o.get_device_list = get_device_list;
  o.free_device_list = free_device_list;
  o.get_device_name = get_device_name;
  o.open_device = open_device;
  o.close_device = close_device;
  o.query_device = query_device;
  o.query_port = query_port;
  o.query_gid = query_gid;
  o.alloc_pd = alloc_pd;
  o.dealloc_pd = dealloc_pd;
  o.reg_mr = reg_mr;
  o.dereg_mr = dereg_mr;
  o.reg_dmabuf_mr = reg_dmabuf_mr;
  o.reg_mr_iova2 = reg_mr_iova2;
  o.create_comp_channel = create_comp_channel;
  o.destroy_comp_channel = destroy_comp_channel;
  o.create_cq = create_cq;
  o.destroy_cq = destroy_cq;
  o.get_cq_event = get_cq_event;
  o.ack_cq_events = ack_cq_events;
  o.req_notify_cq = req_notify_cq;
  o.poll_cq = soft_poll_cq;
  o.create_qp = create_qp;
  o.modify_qp = modify_qp;
  o.destroy_qp = destroy_qp;
  o.post_send = soft_post_send;
  o.post_recv = soft_post_recv;
  o.mlx5_supported = soft_mlx5_supported;
  o.mlx5_qp_info = soft_mlx5_qp_info;
  o.mlx5_cq_info = soft_mlx5_cq_info;
  return o;
}

}  // namespace

ucs::Result<const VerbsOps*> verbs_ops_soft(const std::string& fabric, unsigned devices,
                                            std::string* why) {
  static const VerbsOps ops = make_ops();
  Provider& p = provider();
  std::lock_guard guard(p.lock);
  if (p.fabric) {
    if (p.fabric->name() != fabric || p.devices != devices) {
      if (why) *why = "the soft provider is already set up with another fabric or device count";
      return ucs::Status::InvalidParam;
    }
    return &ops;
  }
  if (devices == 0 || devices > kMaxDevices) {
    if (why) *why = "soft device count must be 1.." + std::to_string(kMaxDevices);
    return ucs::Status::InvalidParam;
  }
  ucs::Result<Fabric*> f = Fabric::open(fabric);
  if (!f.ok()) {
    if (why) *why = "soft fabric '" + fabric + "' does not open";
    return f.status();
  }
  p.fabric = *f;
  p.devices = devices;
  p.device_storage.resize(devices);
  for (unsigned i = 0; i < devices; ++i) {
    SoftDevice& d = p.device_storage[i];
    d.index = i;
    std::snprintf(d.dev.name, sizeof(d.dev.name), "mcsoft%u", i);
    std::snprintf(d.dev.dev_name, sizeof(d.dev.dev_name), "uverbs-soft%u", i);
    d.dev.node_type = IBV_NODE_CA;
    d.dev.transport_type = IBV_TRANSPORT_IB;
  }
  return &ops;
}

}  // namespace mc::uct::ib::soft

extern "C" __attribute__((visibility("default"))) const mc::uct::ib::VerbsOps* mc_ib_soft_verbs_ops(
    uint32_t abi, const char* fabric, unsigned devices, std::string* why) {
  if (abi != mc::uct::ib::kVerbsOpsAbi) {
    *why = "the soft provider library was built with another verbs table (abi " +
           std::to_string(mc::uct::ib::kVerbsOpsAbi) + ", the module's " + std::to_string(abi) +
           ")";
    return nullptr;
  }
  auto ops = mc::uct::ib::soft::verbs_ops_soft(fabric ? fabric : "", devices, why);
  return ops.ok() ? *ops : nullptr;
}
