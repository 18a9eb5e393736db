// SPDX-License-Identifier: Apache-2.0
// MemHandle: registration in every suitable memory domain, and rkey_pack.
#include "ucp/api/mem_handle.h"

#include <algorithm>
#include <cstdlib>

#include "ucp/api/context.h"
#include "ucp/core/remote_regions.h"
#include "ucp/core/rkey_container.h"
#include "ucs/log/log.h"

namespace mc::ucp {

namespace {

// What the memory domains that detect memory types say of the range; Host
// when none claims it.
uct::MemType detect(const Context& context, const void* address, size_t length) {
  for (const MdEntry& md : context.mds()) {
    if (md.attr.detect_mem_types == 0) continue;
    const uct::MemType t = md.md->detect_mem_type(address, length);
    if (t != uct::MemType::Host && t != uct::MemType::Unknown) return t;
  }
  return uct::MemType::Host;
}

}  // namespace

Result<std::unique_ptr<MemHandle>> MemHandle::map(Context& context, void* address, size_t length,
                                                  unsigned access, uct::MemType mem) {
  if (!address || length == 0) {
    MC_LOG(error) << "ucp: cannot map " << length << " bytes at " << address;
    return Status::InvalidParam;
  }
  std::unique_ptr<MemHandle> h(new MemHandle(&context, address, length));
  h->per_md_.resize(context.mds().size());
  h->mem_type_ = mem == uct::MemType::Unknown ? detect(context, address, length) : mem;
  // GPU memory that no md here registers is still bookkept: a peer may
  // reach it by remote staging (which then names what is missing here).
  if (h->register_all(access) == 0 && h->mem_type_ == uct::MemType::Host) {
    MC_LOG(error) << "ucp: no memory domain could register " << length << " bytes of "
                  << uct::mem_type_name(h->mem_type_) << " memory at " << address;
    return Status::Unsupported;
  }
  if (h->mem_type_ != uct::MemType::Host && (access & uct::kAccessRemote)) {
    h->region_ =
        context.remote_regions().add(reinterpret_cast<uintptr_t>(address), length, h->mem_type_);
  }
  return h;
}

Result<std::unique_ptr<MemHandle>> MemHandle::alloc(Context& context, size_t length,
                                                    unsigned access) {
  if (length == 0) {
    MC_LOG(error) << "ucp: cannot allocate 0 bytes";
    return Status::InvalidParam;
  }
  for (size_t i = 0; i < context.mds().size(); ++i) {
    const MdEntry& md = context.mds()[i];
    // Only a domain some enabled transport uses (MC_TLS=tcp: no sm memory).
    const auto& res = context.resources();
    const bool used = std::any_of(res.begin(), res.end(), [i](const ResourceInfo& r) {
      return r.md_index == i && r.enabled;
    });
    if (!used || !(md.attr.flags & uct::kMdAlloc)) continue;
    Result<std::unique_ptr<uct::MemHandle>> r =
        md.md->mem_alloc(length, uct::MemType::Host, access);
    if (!r.ok()) {
      MC_LOG(debug) << "ucp: md " << md.name << " did not allocate " << length
                    << " bytes: " << ucs::status_string(r.status());
      continue;
    }
    std::unique_ptr<MemHandle> h(new MemHandle(&context, (*r)->address(), length));
    h->per_md_.resize(context.mds().size());
    h->per_md_[i] = std::move(*r);
    h->alloc_md_ = static_cast<int>(i);
    (void)h->register_all(access);
    return h;
  }
  // Nothing allocates: page-aligned heap memory, registered.
  const size_t page = 4096;
  void* mem = std::aligned_alloc(page, (length + page - 1) / page * page);
  if (mem == nullptr) {
    MC_LOG(error) << "ucp: cannot allocate " << length << " bytes";
    return Status::NoMemory;
  }
  Result<std::unique_ptr<MemHandle>> h = map(context, mem, length, access);
  if (!h.ok()) {
    std::free(mem);
    return h.status();
  }
  (*h)->heap_ = mem;
  return h;
}

size_t MemHandle::register_all(unsigned access) {
  size_t registered = 0;
  for (size_t i = 0; i < context_->mds().size(); ++i) {
    const MdEntry& md = context_->mds()[i];
    // GPU memory only where the md takes it (cuda_copy, ib through dma-buf):
    // a host-only md (tcp, sm) would hand peers a key to memory its
    // transport cannot touch.
    if (per_md_[i] || !(md.attr.flags & uct::kMdReg) ||
        !(md.attr.reg_mem_types & uct::mem_type_bit(mem_type_))) {
      continue;
    }
    Result<std::unique_ptr<uct::MemHandle>> r = md.md->mem_reg(address_, length_, access);
    if (!r.ok()) {
      MC_LOG(debug) << "ucp: md " << md.name << " did not register " << length_
                    << " bytes: " << ucs::status_string(r.status());
      continue;
    }
    per_md_[i] = std::move(*r);
    ++registered;
  }
  return registered;
}

MemHandle::~MemHandle() {
  if (region_ != 0) context_->remote_regions().remove(region_);
  // Every registration goes before the memory it names.
  for (size_t i = 0; i < per_md_.size(); ++i) {
    if (static_cast<int>(i) != alloc_md_) per_md_[i].reset();
  }
  per_md_.clear();
  std::free(heap_);
}

const uct::MemHandle* MemHandle::uct_memh(size_t md_index) const {
  return md_index < per_md_.size() ? per_md_[md_index].get() : nullptr;
}

Result<std::vector<uint8_t>> MemHandle::rkey_pack() const {
  RkeyContainer c;
  c.address = reinterpret_cast<uintptr_t>(address_);
  c.length = length_;
  c.mem_type = static_cast<uint8_t>(mem_type_);
  for (size_t i = 0; i < per_md_.size(); ++i) {
    if (!per_md_[i] || !(per_md_[i]->access() & uct::kAccessRemote)) continue;
    const MdEntry& md = context_->mds()[i];
    std::vector<uint8_t> packed;
    MC_RETURN_IF_ERROR(md.md->mkey_pack(*per_md_[i], &packed));
    c.entries.emplace_back(md.md->name(), std::move(packed));
  }
  // Memory no md packs a key for may still be reached by remote staging
  // when it is remote-accessible (the peer asks; this side checks).
  if (c.entries.empty() && region_ == 0) {
    MC_LOG(error) << "ucp: rkey_pack of a registration that allows no remote access";
    return Status::Unsupported;
  }
  return rkey_container_pack(c);
}

}  // namespace mc::ucp
