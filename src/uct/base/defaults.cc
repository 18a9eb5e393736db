// SPDX-License-Identifier: Apache-2.0
// What the UCT base classes do for operations a transport does not offer
// (its IfaceAttr::cap says which), and the AM handler table.
#include "ucs/log/log.h"
#include "uct/api/ep.h"
#include "uct/api/iface.h"
#include "uct/api/md.h"

namespace mc::uct {

Result<std::unique_ptr<MemHandle>> MemoryDomain::mem_alloc(size_t, MemType, unsigned) {
  return Status::Unsupported;
}

Result<std::unique_ptr<MemHandle>> MemoryDomain::mem_reg_file(const std::string&, unsigned) {
  return Status::Unsupported;
}

std::vector<Result<std::unique_ptr<MemHandle>>> MemoryDomain::mem_reg_batch(
    std::span<const MemRegRequest> reqs) {
  std::vector<Result<std::unique_ptr<MemHandle>>> out;
  out.reserve(reqs.size());
  for (const MemRegRequest& r : reqs) out.push_back(mem_reg(r.address, r.length, r.access));
  return out;
}

MemType MemoryDomain::detect_mem_type(const void*, size_t) const {
  return MemType::Host;
}

Status Iface::set_am_handler(uint8_t id, AmHandler handler) {
  if (id >= kAmIdMax) {
    MC_LOG(error) << "active message id " << unsigned(id) << " is out of range [0, " << kAmIdMax
                  << ")";
    return Status::InvalidParam;
  }
  am_handlers_[id] = std::move(handler);
  return Status::Ok;
}

Status Iface::invoke_am(uint8_t id, const void* data, size_t length, unsigned flags) {
  if (id >= kAmIdMax || !am_handlers_[id]) {
    MC_LOG(warn) << "dropped an active message with id " << unsigned(id) << " (" << length
                 << " bytes): no handler is set";
    return Status::NoElem;
  }
  return am_handlers_[id](data, length, flags);
}

Result<int> Iface::event_fd() {
  return Status::Unsupported;
}
Status Iface::arm() {
  return Status::Unsupported;
}

Status Endpoint::put_short(const void*, size_t, uint64_t, const Rkey&) {
  return Status::Unsupported;
}
Result<size_t> Endpoint::put_bcopy(PackCallback, void*, uint64_t, const Rkey&) {
  return Status::Unsupported;
}
Status Endpoint::put_zcopy(const Iov*, size_t, uint64_t, const Rkey&, Completion*) {
  return Status::Unsupported;
}
Status Endpoint::get_bcopy(UnpackCallback, void*, size_t, uint64_t, const Rkey&, Completion*) {
  return Status::Unsupported;
}
Status Endpoint::get_zcopy(const Iov*, size_t, uint64_t, const Rkey&, Completion*) {
  return Status::Unsupported;
}
Status Endpoint::am_short(uint8_t, uint64_t, const void*, size_t) {
  return Status::Unsupported;
}
Result<size_t> Endpoint::am_bcopy(uint8_t, PackCallback, void*) {
  return Status::Unsupported;
}
Status Endpoint::am_zcopy(uint8_t, const void*, size_t, const Iov*, size_t, Completion*) {
  return Status::Unsupported;
}
Status Endpoint::fence() {
  return Status::Ok;
}  // transports that reorder override this
Status Endpoint::pending_add(PendingReq*) {
  return Status::Unsupported;
}
void Endpoint::pending_purge(const std::function<void(PendingReq*)>&) {}
Status Endpoint::check() {
  return Status::Ok;
}
Status Endpoint::connect_status() {
  return Status::Ok;
}

}  // namespace mc::uct
