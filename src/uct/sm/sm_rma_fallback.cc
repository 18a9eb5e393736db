// SPDX-License-Identifier: Apache-2.0
// Put/get through the rings, for memory CMA cannot reach.
#include "uct/sm/sm_rma_fallback.h"

#include <algorithm>
#include <cstring>

#include "ucs/log/log.h"
#include "uct/sm/sm_ep.h"
#include "uct/sm/sm_iface.h"
#include "uct/sm/sm_region.h"

namespace mc::uct::sm {

namespace {

// Copies `len` bytes at byte `offset` of the gathered `iov` to `dst`
// (to_iov false) or from `src` into it (to_iov true).
void iov_copy(const std::vector<Iov>& iov, size_t offset, uint8_t* buf, size_t len, bool to_iov) {
  for (const Iov& v : iov) {
    if (len == 0) break;
    if (offset >= v.length) {
      offset -= v.length;
      continue;
    }
    const size_t n = std::min(v.length - offset, len);
    uint8_t* p = static_cast<uint8_t*>(v.buffer) + offset;
    if (to_iov) {
      std::memcpy(p, buf, n);
    } else {
      std::memcpy(buf, p, n);
    }
    buf += n;
    len -= n;
    offset = 0;
  }
}

}  // namespace

RmaFallback::RmaFallback(SmIface* iface)
    : iface_(iface), fragment_size_(rma_fragment_size(iface->capacity())) {
  reply_.resize(iface->capacity());
}

Status RmaFallback::start(SmEp* ep, bool write, uint64_t reg_id, const Iov* iov, size_t count,
                          size_t total, uint64_t remote_addr, UnpackCallback unpack, void* arg,
                          Completion* comp, bool buffered) {
  const uint64_t id = next_id_++;
  Op& op = ops_[id];
  op.ep = ep;
  op.write = write;
  op.reg_id = reg_id;
  op.remote_addr = remote_addr;
  op.iov.assign(iov, iov + count);
  op.unpack = unpack;
  op.arg = arg;
  op.total = total;
  op.comp = comp;
  if (!send_fragment(id, op)) {
    ops_.erase(id);
    return Status::NoResource;
  }
  ep->op_started();
  // A buffered put is one fragment, already copied into the ring; flush()
  // waits for its answer.
  if (buffered) return Status::Ok;
  while (op.sent < op.total && send_fragment(id, op)) {
  }
  if (op.sent < op.total) {
    ep->tx_ops().push_back(id);
    iface_->schedule(ep);
  }
  return Status::InProgress;
}

bool RmaFallback::send_fragment(uint64_t id, Op& op) {
  const size_t len = std::min(fragment_size_, op.total - op.sent);
  PeerRing& peer = op.ep->peer();
  Ring::Claim c;
  if (!peer.claim(&c)) return false;
  const IfaceId& self = iface_->id();
  RmaReq req{};
  req.op_id = id;
  req.offset = op.sent;
  req.reg_id = op.reg_id;
  req.remote_addr = op.remote_addr + op.sent;
  req.length = static_cast<uint32_t>(len);
  req.reply_pid = self.pid;
  req.reply_counter = self.counter;
  req.reply_random = self.random;
  req.reply_start = self.start;
  std::memcpy(c.payload(), &req, sizeof(req));
  if (op.write) iov_copy(op.iov, op.sent, c.payload() + sizeof(req), len, false);
  peer.publish(c, op.write ? kMsgPutReq : kMsgGetReq, 0,
               static_cast<uint32_t>(sizeof(req) + (op.write ? len : 0)));
  op.sent += len;
  ++op.in_flight;
  return true;
}

unsigned RmaFallback::push(SmEp* ep) {
  unsigned n = 0;
  auto& queue = ep->tx_ops();
  while (!queue.empty()) {
    const uint64_t id = queue.front();
    auto it = ops_.find(id);
    if (it == ops_.end()) {
      queue.pop_front();
      continue;
    }
    Op& op = it->second;
    while (op.sent < op.total && !is_error(op.status) && send_fragment(id, op)) ++n;
    if (op.sent < op.total && !is_error(op.status)) break;  // the ring is full
    queue.pop_front();
    if (done(op)) {
      finish(id);  // its completion may have destroyed `ep`: no more this round
      break;
    }
  }
  return n;
}

void RmaFallback::serve(uint8_t type, std::span<const uint8_t> msg) {
  const bool write = type == kMsgPutReq;
  RmaReq req;
  if (msg.size() < sizeof(req)) {
    MC_LOG(error) << "sm: dropped a truncated put/get request (" << msg.size() << " bytes)";
    return;
  }
  std::memcpy(&req, msg.data(), sizeof(req));
  const size_t expect = sizeof(req) + (write ? req.length : 0);
  if (req.length > fragment_size_ || msg.size() != expect) {
    MC_LOG(error) << "sm: dropped a malformed " << (write ? "put" : "get") << " request of "
                  << req.length << " bytes from process " << req.reply_pid;
    return;
  }
  const IfaceId from{req.reply_pid, req.reply_counter, req.reply_random, req.reply_start,
                     iface_->id().slot_size};
  Result<PeerRing*> peer = iface_->peer(from);
  if (!peer.ok()) return;  // logged; the requester is gone or lied about itself

  RmaRep rep{req.op_id, req.offset, req.length, 0};
  const uint8_t* data = msg.data() + sizeof(req);
  uint8_t* out = reply_.data() + sizeof(rep);
  const char* why = "";
  const Status status = RegionTable::instance().with_range(
      req.reg_id, req.remote_addr, req.length, write ? kAccessRemoteWrite : kAccessRemoteRead,
      [&](uint8_t* local) {
        if (req.length == 0) return;
        if (write) {
          std::memcpy(local, data, req.length);
        } else {
          std::memcpy(out, local, req.length);
        }
      },
      &why);
  // Logged once per operation (its first fragment), not once per fragment.
  if (is_error(status) && req.offset == 0) {
    MC_LOG(error) << "sm: refused a " << (write ? "put" : "get") << " of " << req.length
                  << " bytes at 0x" << std::hex << req.remote_addr << std::dec << " from process "
                  << req.reply_pid << ": " << why;
  }
  rep.status = static_cast<int32_t>(status);
  std::memcpy(reply_.data(), &rep, sizeof(rep));
  const size_t len = sizeof(rep) + (!write && status == Status::Ok ? req.length : 0);
  const uint8_t reply_type = write ? kMsgPutAck : kMsgGetRep;
  PeerRing& to = **peer;
  // Replies keep their order behind those already waiting.
  if (to.replies.empty() && to.send(reply_type, 0, {{reply_.data(), len}})) return;
  to.replies.emplace_back(reply_type, std::vector<uint8_t>(reply_.data(), reply_.data() + len));
  iface_->note_replies();
}

void RmaFallback::complete(uint8_t type, std::span<const uint8_t> msg) {
  RmaRep rep;
  if (msg.size() < sizeof(rep)) {
    MC_LOG(error) << "sm: dropped a truncated put/get reply (" << msg.size() << " bytes)";
    return;
  }
  std::memcpy(&rep, msg.data(), sizeof(rep));
  auto it = ops_.find(rep.op_id);
  if (it == ops_.end()) return;  // its operation was canceled or failed
  Op& op = it->second;
  auto status = static_cast<Status>(rep.status);
  const bool ok = status == Status::Ok;
  const bool offset_ok = rep.offset < op.sent && rep.offset % fragment_size_ == 0;
  const size_t expect_len = offset_ok ? std::min(fragment_size_, op.total - rep.offset) : SIZE_MAX;
  const size_t expect_msg = sizeof(rep) + (ok && type == kMsgGetRep ? rep.length : 0);
  if (op.write != (type == kMsgPutAck) || rep.length != expect_len || msg.size() != expect_msg ||
      op.in_flight == 0) {
    MC_LOG(error) << "sm: dropped a reply that does not match its request (operation " << rep.op_id
                  << ", offset " << rep.offset << ", " << rep.length << " bytes)";
    return;
  }
  --op.in_flight;
  if (ok && !op.write) {
    const uint8_t* data = msg.data() + sizeof(rep);
    if (op.unpack) {
      op.unpack(op.arg, data, rep.length);
      // The callback may have destroyed the endpoint, and with it the op.
      it = ops_.find(rep.op_id);
      if (it == ops_.end()) return;
    } else {
      iov_copy(op.iov, rep.offset, const_cast<uint8_t*>(data), rep.length, true);
    }
  }
  Op& cur = it->second;
  if (!ok && cur.status == Status::Ok) {
    cur.status = status;
    if (!cur.comp) {  // a short or bcopy put: nobody else will hear of it
      MC_LOG(error) << "sm: put to process " << cur.ep->peer().id().pid
                    << " failed at the target: " << status;
    }
  }
  if (done(cur)) finish(rep.op_id);
}

void RmaFallback::finish(uint64_t id) {
  auto node = ops_.extract(id);
  Op& op = node.mapped();
  op.ep->op_done(op.status);
  if (op.comp) completion_update(op.comp, op.status);
  if (ops_.empty()) iface_->ops_drained();
}

void RmaFallback::fail_ep(SmEp* ep, Status status) {
  ep->tx_ops().clear();
  std::vector<uint64_t> ids;
  for (auto& [id, op] : ops_) {
    if (op.ep == ep) ids.push_back(id);
  }
  std::sort(ids.begin(), ids.end());  // complete in posting order
  for (uint64_t id : ids) {
    auto it = ops_.find(id);
    if (it == ops_.end()) continue;
    if (it->second.status == Status::Ok) it->second.status = status;
    finish(id);
  }
}

}  // namespace mc::uct::sm
