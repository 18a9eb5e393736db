// SPDX-License-Identifier: Apache-2.0
// self iface.
#include "uct/self/self_iface.h"

#include "ucs/log/log.h"
#include "uct/self/self_ep.h"

namespace mc::uct::self {

namespace {

constexpr double kMemcpyBandwidth = 6.0 * 1024 * 1024 * 1024;

}  // namespace

SelfIface::SelfIface(SelfMd* md, SelfConfig config)
    : Iface(md), md_(md), config_(config), self_addr_("self", "it loops back inside this process") {}

IfaceAttr SelfIface::query() const {
  IfaceAttr attr;
  attr.cap = kCapAmShort | kCapAmBcopy | kCapAmZcopy | kCapPutShort | kCapPutBcopy |
             kCapPutZcopy | kCapGetBcopy | kCapGetZcopy | kCapPending | kCapConnectToIface;
  attr.am = OpLimits{config_.seg_size, config_.seg_size, 0, config_.seg_size, 16, 128};
  attr.put = OpLimits{config_.seg_size, config_.seg_size, 0, SIZE_MAX, 16, 0};
  attr.get = OpLimits{0, config_.seg_size, 0, SIZE_MAX, 16, 0};
  attr.latency = LinearFunc{0, 0};
  attr.bandwidth = Bandwidth{kMemcpyBandwidth, 0};
  attr.overhead = 10e-9;
  attr.priority = 0;
  attr.device_addr_len = SelfAddress::kAddrLen;
  attr.iface_addr_len = SelfAddress::kAddrLen;
  return attr;
}

unsigned SelfIface::progress() {
  unsigned events = 0;
  // Deliver only what was queued before this call, so a handler that sends
  // to itself cannot keep progress() busy forever.
  for (size_t n = queue_.size(); n > 0 && !queue_.empty(); --n) {
    Message m = std::move(queue_.front());
    queue_.pop_front();
    (void)invoke_am(m.id, m.data.data(), m.data.size(), 0);
    ++events;
  }
  events += pending_.dispatch();
  return events;
}

std::vector<uint8_t> SelfIface::device_address() const { return self_addr_.device_address(); }

std::vector<uint8_t> SelfIface::iface_address() const { return self_addr_.iface_address(); }

bool SelfIface::is_reachable(std::span<const uint8_t> device_addr,
                             std::span<const uint8_t> iface_addr, std::string* reason) const {
  return self_addr_.is_reachable(device_addr, iface_addr, reason);
}

Result<std::unique_ptr<Endpoint>> SelfIface::ep_create(std::span<const uint8_t> device_addr,
                                                       std::span<const uint8_t> iface_addr) {
  MC_RETURN_IF_ERROR(self_addr_.check_connect(device_addr, iface_addr));
  return std::unique_ptr<Endpoint>(new SelfEp(this));
}

Status SelfIface::flush(Completion*) { return Status::Ok; }  // every operation is synchronous

Status SelfIface::enqueue_am(uint8_t id, std::vector<uint8_t> data) {
  if (id >= kAmIdMax) {
    MC_LOG(error) << "self: active message id " << unsigned(id) << " out of range";
    return Status::InvalidParam;
  }
  if (!has_room()) return Status::NoResource;
  queue_.push_back(Message{id, std::move(data)});
  return Status::Ok;
}

}  // namespace mc::uct::self
