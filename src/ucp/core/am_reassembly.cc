// SPDX-License-Identifier: Apache-2.0
// Active-message reassembly.
#include "ucp/core/am_reassembly.h"

#include <cstring>

#include "ucp/proto/am_wire.h"
#include "ucs/datastruct/wire.h"
#include "ucs/log/log.h"

namespace mc::ucp {

ucs::Status AmReassembly::on_fragment(const void* data, size_t length, const Deliver& deliver) {
  std::span<const uint8_t> bytes(static_cast<const uint8_t*>(data), length);
  ucs::WireReader r(bytes);
  const uint16_t id = r.u16();
  (void)r.u16();
  (void)r.u32();
  const uint64_t sender = r.u64();
  const uint64_t message = r.u64();
  const uint64_t total = r.u64();
  const uint64_t offset = r.u64();
  const size_t frag_len = r.remaining();
  if (!r.ok() || total > proto::kAmMaxMessage || offset > total || frag_len > total - offset) {
    MC_LOG(error) << "ucp: dropped a malformed active-message fragment (" << length
                  << " bytes, total " << total << ", offset " << offset << ")";
    return ucs::Status::BadData;
  }
  const auto key = std::make_pair(sender, message);
  auto it = messages_.find(key);
  if (it == messages_.end()) {
    it = messages_.emplace(key, Message{}).first;
    it->second.id = id;
    it->second.bytes.resize(total);
  }
  Message& m = it->second;
  if (m.bytes.size() != total || m.id != id) {
    MC_LOG(error) << "ucp: active-message fragment disagrees with its message's id or length";
    return ucs::Status::BadData;
  }
  if (m.offsets.insert(offset).second) {  // a duplicate is counted once
    if (frag_len)
      std::memcpy(m.bytes.data() + offset, bytes.data() + proto::kAmFragHeader, frag_len);
    m.received += frag_len;
  }
  if (m.received >= total) {
    Message whole = std::move(m);
    messages_.erase(it);
    deliver(whole.id, whole.bytes.data(), whole.bytes.size());
  }
  return ucs::Status::Ok;
}

}  // namespace mc::ucp
