// SPDX-License-Identifier: Apache-2.0
// MemHandle: registration in every suitable memory domain, and rkey_pack.
#include "ucp/api/mem_handle.h"

#include "ucp/api/context.h"
#include "ucp/core/rkey_container.h"
#include "ucs/log/log.h"

namespace mc::ucp {

Result<std::unique_ptr<MemHandle>> MemHandle::map(Context& context, void* address, size_t length,
                                                  unsigned access) {
  if (!address || length == 0) {
    MC_LOG(error) << "ucp: cannot map " << length << " bytes at " << address;
    return Status::InvalidParam;
  }
  std::unique_ptr<MemHandle> h(new MemHandle(&context, address, length));
  h->per_md_.resize(context.mds().size());
  size_t registered = 0;
  for (size_t i = 0; i < context.mds().size(); ++i) {
    const MdEntry& md = context.mds()[i];
    if (!(md.attr.flags & uct::kMdReg) ||
        !(md.attr.reg_mem_types & uct::mem_type_bit(uct::MemType::Host))) {
      continue;
    }
    Result<std::unique_ptr<uct::MemHandle>> r = md.md->mem_reg(address, length, access);
    if (!r.ok()) {
      MC_LOG(debug) << "ucp: md " << md.name << " did not register " << length
                    << " bytes: " << ucs::status_string(r.status());
      continue;
    }
    h->per_md_[i] = std::move(*r);
    ++registered;
  }
  if (registered == 0) {
    MC_LOG(error) << "ucp: no memory domain could register " << length << " bytes at " << address;
    return Status::Unsupported;
  }
  return h;
}

MemHandle::~MemHandle() = default;

bool MemHandle::contains(const void* addr, size_t len) const {
  const auto a = reinterpret_cast<uintptr_t>(addr);
  const auto base = reinterpret_cast<uintptr_t>(address_);
  return a >= base && len <= length_ && a - base <= length_ - len;
}

const uct::MemHandle* MemHandle::uct_memh(size_t md_index) const {
  return md_index < per_md_.size() ? per_md_[md_index].get() : nullptr;
}

Result<std::vector<uint8_t>> MemHandle::rkey_pack() const {
  RkeyContainer c;
  c.address = reinterpret_cast<uintptr_t>(address_);
  c.length = length_;
  for (size_t i = 0; i < per_md_.size(); ++i) {
    if (!per_md_[i] || !(per_md_[i]->access() & uct::kAccessRemote)) continue;
    const MdEntry& md = context_->mds()[i];
    std::vector<uint8_t> packed;
    MC_RETURN_IF_ERROR(md.md->mkey_pack(*per_md_[i], &packed));
    c.entries.emplace_back(md.md->name(), std::move(packed));
  }
  if (c.entries.empty()) {
    MC_LOG(error) << "ucp: rkey_pack of a registration that allows no remote access";
    return Status::Unsupported;
  }
  return rkey_container_pack(c);
}

}  // namespace mc::ucp
