// SPDX-License-Identifier: Apache-2.0
// RC endpoint (rc_verbs, rc_mlx5) data operations. An active message on the wire is
//   u8 am id | payload                 (the payload of a SEND)
#include <cstring>

#include "ucs/log/log.h"
#include "uct/ib/rc/rc_ep.h"
#include "uct/ib/rc/rc_iface.h"

namespace mc::uct::ib::rc {

namespace {

constexpr size_t kAmHeader = 1;  // the am id

}  // namespace

Result<uint32_t> RcEp::remote_key(const Rkey& rkey) const {
  const auto* key = dynamic_cast<const IbRkey*>(&rkey);
  if (!key) {
    MC_LOG(error) << iface_->tl_name() << ": rkey was not unpacked by an ib memory domain";
    return Status::InvalidParam;
  }
  Result<uint32_t> r = key->for_device(peer_.guid);
  if (!r.ok()) {
    MC_LOG(error) << iface_->tl_name() << ": the rkey has no key for the peer's device (guid 0x"
                  << std::hex << peer_.guid << ")";
    return Status::InvalidParam;
  }
  return r;
}

Result<int> RcEp::iov_sges(const Iov* iov, size_t count, ibv_sge* sge) const {
  if (count > iface_->config().max_sge) {
    MC_LOG(error) << iface_->tl_name() << ": " << count << " iov entries, more than MC_MAX_SGE";
    return Status::InvalidParam;
  }
  int n = 0;
  for (size_t i = 0; i < count; ++i) {
    if (iov[i].length == 0) continue;  // needs no registration and no SGE
    const auto* h = dynamic_cast<const IbMemHandle*>(iov[i].memh);
    if (!h || !h->contains(iov[i].buffer, iov[i].length)) {
      MC_LOG(error) << iface_->tl_name() << ": iov entry " << i
                    << " is not inside a registration of this md";
      return Status::InvalidParam;
    }
    sge[n++] = ibv_sge{reinterpret_cast<uintptr_t>(iov[i].buffer),
                       static_cast<uint32_t>(iov[i].length), h->lkey(iface_->dev_index())};
  }
  return n;
}

Status RcEp::post_rdma(RcQp& qp, ibv_wr_opcode op, ibv_sge* sge, int nsge, uint64_t raddr,
                       uint32_t rkey, unsigned flags, TxOp txop) {
  ibv_send_wr wr{};
  wr.opcode = op;
  wr.sg_list = sge;
  wr.num_sge = nsge;
  wr.send_flags = flags;
  wr.wr.rdma.remote_addr = raddr;
  wr.wr.rdma.rkey = rkey;
  return qp.post(wr, txop);
}

Status RcEp::post_send(ibv_sge* sge, int nsge, unsigned flags, TxOp txop) {
  ibv_send_wr wr{};
  wr.opcode = IBV_WR_SEND;
  wr.sg_list = sge;
  wr.num_sge = nsge;
  wr.send_flags = flags;
  return qps_[0]->post(wr, txop);
}

Status RcEp::put_short(const void* buffer, size_t length, uint64_t remote_addr, const Rkey& rkey) {
  if (length > iface_->query().put.max_short) return Status::InvalidParam;
  MC_ASSIGN_OR_RETURN(uint32_t key, remote_key(rkey));
  RcQp& qp = *qps_[0];
  MC_RETURN_IF_ERROR(ready(qp));
  if (length <= iface_->config().max_inline) {
    ibv_sge sge{reinterpret_cast<uintptr_t>(buffer), static_cast<uint32_t>(length), 0};
    return post_rdma(qp, IBV_WR_RDMA_WRITE, &sge, 1, remote_addr, key, IBV_SEND_INLINE, {});
  }
  void* buf = iface_->tx_pool().get();
  if (!buf) return Status::NoResource;
  std::memcpy(buf, buffer, length);
  ibv_sge sge{reinterpret_cast<uintptr_t>(buf), static_cast<uint32_t>(length),
              iface_->tx_pool().lkey(buf)};
  TxOp op;
  op.buf = buf;
  const Status s = post_rdma(qp, IBV_WR_RDMA_WRITE, &sge, 1, remote_addr, key, 0, op);
  if (s != Status::Ok) iface_->tx_pool().put(buf);
  return s;
}

Result<size_t> RcEp::put_bcopy(PackCallback pack, void* arg, uint64_t remote_addr,
                               const Rkey& rkey) {
  MC_ASSIGN_OR_RETURN(uint32_t key, remote_key(rkey));
  RcQp& qp = rma_qp();
  MC_RETURN_IF_ERROR(ready(qp));
  void* buf = iface_->tx_pool().get();
  if (!buf) return Status::NoResource;
  const size_t length = pack(buf, arg);
  if (length > iface_->tx_pool().size()) {
    iface_->tx_pool().put(buf);
    return Status::InvalidParam;
  }
  ibv_sge sge{reinterpret_cast<uintptr_t>(buf), static_cast<uint32_t>(length),
              iface_->tx_pool().lkey(buf)};
  TxOp op;
  op.buf = buf;
  const Status s = post_rdma(qp, IBV_WR_RDMA_WRITE, &sge, 1, remote_addr, key, 0, op);
  if (s != Status::Ok) {
    iface_->tx_pool().put(buf);
    return s;
  }
  return length;
}

Status RcEp::put_zcopy(const Iov* iov, size_t iov_count, uint64_t remote_addr, const Rkey& rkey,
                       Completion* comp) {
  MC_ASSIGN_OR_RETURN(uint32_t key, remote_key(rkey));
  ibv_sge sge[32];
  MC_ASSIGN_OR_RETURN(int nsge, iov_sges(iov, iov_count, sge));
  RcQp& qp = rma_qp();
  MC_RETURN_IF_ERROR(ready(qp));
  TxOp op;
  op.comp = comp;
  MC_RETURN_IF_ERROR(post_rdma(qp, IBV_WR_RDMA_WRITE, sge, nsge, remote_addr, key, 0, op));
  return comp ? Status::InProgress : Status::Ok;
}

Status RcEp::get_bcopy(UnpackCallback unpack, void* arg, size_t length, uint64_t remote_addr,
                       const Rkey& rkey, Completion* comp) {
  if (length > iface_->tx_pool().size()) return Status::InvalidParam;
  MC_ASSIGN_OR_RETURN(uint32_t key, remote_key(rkey));
  RcQp& qp = rma_qp();
  MC_RETURN_IF_ERROR(ready(qp));
  void* buf = iface_->tx_pool().get();
  if (!buf) return Status::NoResource;
  ibv_sge sge{reinterpret_cast<uintptr_t>(buf), static_cast<uint32_t>(length),
              iface_->tx_pool().lkey(buf)};
  TxOp op;
  op.buf = buf;
  op.comp = comp;
  op.unpack = unpack;
  op.arg = arg;
  op.length = length;
  const Status s = post_rdma(qp, IBV_WR_RDMA_READ, &sge, 1, remote_addr, key, 0, op);
  if (s != Status::Ok) iface_->tx_pool().put(buf);
  return s == Status::Ok ? Status::InProgress : s;
}

Status RcEp::get_zcopy(const Iov* iov, size_t iov_count, uint64_t remote_addr, const Rkey& rkey,
                       Completion* comp) {
  MC_ASSIGN_OR_RETURN(uint32_t key, remote_key(rkey));
  ibv_sge sge[32];
  MC_ASSIGN_OR_RETURN(int nsge, iov_sges(iov, iov_count, sge));
  RcQp& qp = rma_qp();
  MC_RETURN_IF_ERROR(ready(qp));
  TxOp op;
  op.comp = comp;
  // A get without a completion still has to be waited for by flush: the
  // data lands only when its CQE (or a later one) arrives.
  MC_RETURN_IF_ERROR(post_rdma(qp, IBV_WR_RDMA_READ, sge, nsge, remote_addr, key, 0, op));
  return comp ? Status::InProgress : Status::Ok;
}

Status RcEp::am_short(uint8_t id, uint64_t header, const void* payload, size_t length) {
  const size_t total = kAmHeader + sizeof(header) + length;
  if (id >= kAmIdMax || total - kAmHeader > iface_->query().am.max_short) {
    return Status::InvalidParam;
  }
  MC_RETURN_IF_ERROR(ready(*qps_[0]));
  void* buf = iface_->tx_pool().get();
  if (!buf) return Status::NoResource;
  auto* p = static_cast<uint8_t*>(buf);
  p[0] = id;
  std::memcpy(p + kAmHeader, &header, sizeof(header));
  if (length) std::memcpy(p + kAmHeader + sizeof(header), payload, length);
  ibv_sge sge{reinterpret_cast<uintptr_t>(buf), static_cast<uint32_t>(total),
              iface_->tx_pool().lkey(buf)};
  TxOp op;
  unsigned flags = 0;
  if (total <= iface_->config().max_inline) {
    flags = IBV_SEND_INLINE;  // copied into the WR: the buffer is free at once
  } else {
    op.buf = buf;
  }
  const Status s = post_send(&sge, 1, flags, op);
  if (s != Status::Ok || flags) iface_->tx_pool().put(buf);
  return s;
}

Result<size_t> RcEp::am_bcopy(uint8_t id, PackCallback pack, void* arg) {
  if (id >= kAmIdMax) return Status::InvalidParam;
  MC_RETURN_IF_ERROR(ready(*qps_[0]));
  void* buf = iface_->tx_pool().get();
  if (!buf) return Status::NoResource;
  auto* p = static_cast<uint8_t*>(buf);
  p[0] = id;
  const size_t length = pack(p + kAmHeader, arg);
  if (length + kAmHeader > iface_->tx_pool().size()) {
    iface_->tx_pool().put(buf);
    return Status::InvalidParam;
  }
  ibv_sge sge{reinterpret_cast<uintptr_t>(buf), static_cast<uint32_t>(length + kAmHeader),
              iface_->tx_pool().lkey(buf)};
  TxOp op;
  op.buf = buf;
  const Status s = post_send(&sge, 1, 0, op);
  if (s != Status::Ok) {
    iface_->tx_pool().put(buf);
    return s;
  }
  return length;
}

Status RcEp::am_zcopy(uint8_t id, const void* header, size_t header_length, const Iov* iov,
                      size_t iov_count, Completion* comp) {
  const IfaceAttr attr = iface_->query();
  if (id >= kAmIdMax || header_length > attr.am.max_hdr || iov_count > attr.am.max_iov ||
      header_length + iov_length(iov, iov_count) > attr.am.max_zcopy) {
    return Status::InvalidParam;
  }
  ibv_sge sge[33];
  MC_ASSIGN_OR_RETURN(int nsge, iov_sges(iov, iov_count, sge + 1));
  MC_RETURN_IF_ERROR(ready(*qps_[0]));
  void* buf = iface_->tx_pool().get();
  if (!buf) return Status::NoResource;
  auto* p = static_cast<uint8_t*>(buf);
  p[0] = id;
  if (header_length) std::memcpy(p + kAmHeader, header, header_length);
  sge[0] = ibv_sge{reinterpret_cast<uintptr_t>(buf),
                   static_cast<uint32_t>(kAmHeader + header_length), iface_->tx_pool().lkey(buf)};
  TxOp op;
  op.buf = buf;
  op.comp = comp;
  const Status s = post_send(sge, nsge + 1, 0, op);
  if (s != Status::Ok) {
    iface_->tx_pool().put(buf);
    return s;
  }
  return comp ? Status::InProgress : Status::Ok;
}

}  // namespace mc::uct::ib::rc
