// SPDX-License-Identifier: Apache-2.0
// Names of UCT enums and flags, and completion helpers.
#include "uct/api/types.h"

namespace mc::uct {

const char* mem_type_name(MemType type) {
  switch (type) {
    case MemType::Host: return "host";
    case MemType::Cuda: return "cuda";
    case MemType::CudaManaged: return "cuda-managed";
    case MemType::File: return "file";
    case MemType::Unknown: return "unknown";
  }
  return "?";
}

const char* device_type_name(DeviceType type) {
  switch (type) {
    case DeviceType::Net: return "net";
    case DeviceType::Shm: return "shm";
    case DeviceType::Self: return "self";
    case DeviceType::Acc: return "acc";
    case DeviceType::Storage: return "storage";
  }
  return "?";
}

std::string cap_string(uint64_t cap) {
  static const std::pair<uint64_t, const char*> names[] = {
      {kCapAmShort, "am_short"},   {kCapAmBcopy, "am_bcopy"},
      {kCapAmZcopy, "am_zcopy"},   {kCapPutShort, "put_short"},
      {kCapPutBcopy, "put_bcopy"}, {kCapPutZcopy, "put_zcopy"},
      {kCapGetShort, "get_short"}, {kCapGetBcopy, "get_bcopy"},
      {kCapGetZcopy, "get_zcopy"}, {kCapPending, "pending"},
      {kCapEventFd, "event_fd"},   {kCapConnectToIface, "connect_to_iface"},
      {kCapConnectToEp, "connect_to_ep"}, {kCapErrHandlePeerFailure, "peer_failure"},
      {kCapAmThreadSafe, "am_thread_safe"}, {kCapConnectToSelf, "connect_to_self"}};
  std::string s;
  for (const auto& [bit, name] : names) {
    if (cap & bit) s += (s.empty() ? "" : "|") + std::string(name);
  }
  return s;
}

void completion_update(Completion* comp, Status status) {
  if (!comp) return;
  if (is_error(status) && comp->status == Status::Ok) comp->status = status;
  if (--comp->count == 0 && comp->func) comp->func(comp);
}

size_t iov_length(const Iov* iov, size_t count) {
  size_t total = 0;
  for (size_t i = 0; i < count; ++i) total += iov[i].length;
  return total;
}

}  // namespace mc::uct
