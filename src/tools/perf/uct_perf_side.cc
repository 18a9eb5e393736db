// SPDX-License-Identifier: Apache-2.0
// UctSide: resource lookup, md/iface, buffers, connection.
#include "tools/perf/uct_perf_side.h"

#include <cstdlib>
#include <cstring>
#include <string>

#include "ucs/config/sources.h"
#include "ucs/log/log.h"
#include "ucs/sys/sys.h"
#include "uct/base/component_loader.h"

namespace mc::perf {

namespace {

ucs::config::Sources process_sources() {
  return ucs::config::Sources::from_process().value_or(ucs::config::Sources{});
}

// Every resource of every component, in load order.
std::vector<UctResource> all_resources() {
  std::vector<UctResource> out;
  const ucs::config::Sources sources = process_sources();
  for (uct::Component* c : uct::load_components()) {
    for (const std::string& md_name : c->md_names()) {
      Result<std::unique_ptr<uct::MemoryDomain>> md = c->md_open(md_name, sources);
      if (!md.ok()) continue;
      for (const uct::TlResource& tl : (*md)->query_tl_resources()) {
        out.push_back(UctResource{c, md_name, tl});
      }
    }
  }
  return out;
}

}  // namespace

std::string list_uct_resources() {
  std::string s;
  for (const UctResource& r : all_resources()) {
    s += (s.empty() ? "" : " ") + r.tl.tl_name + "/" + r.tl.dev_name;
  }
  return s.empty() ? "(none: no transport module loaded; see mc_info -m)" : s;
}

Result<UctResource> find_uct_resource(const std::string& tl, const std::string& dev,
                                      const std::string& preferred_dev, std::string* why) {
  if (tl.empty()) {
    *why = "give the transport with -x (available: " + list_uct_resources() + ")";
    MC_LOG(error) << *why;
    return Status::InvalidParam;
  }
  const std::vector<UctResource> all = all_resources();
  const UctResource* first = nullptr;
  for (const UctResource& r : all) {
    if (r.tl.tl_name != tl) continue;
    if (!dev.empty()) {
      if (r.tl.dev_name == dev) return r;
      continue;
    }
    if (r.tl.dev_name == preferred_dev) return r;
    if (!first) first = &r;
  }
  if (first) return *first;
  *why = "no transport '" + tl + "'" + (dev.empty() ? "" : " on device '" + dev + "'") +
         " here; available: " + list_uct_resources();
  MC_LOG(error) << *why;
  return Status::NoDevice;
}

Result<std::unique_ptr<UctSide>> UctSide::open(const UctResource& resource,
                                               const BufLengths& lengths, Alloc alloc,
                                               ucs::EventLoop* async, uct::ErrorHandler on_error,
                                               std::string* why) {
  auto fail = [why](std::string text, Status s) {
    *why = std::move(text) + ": " + ucs::status_string(s);
    MC_LOG(error) << *why;
    return s;
  };
  std::unique_ptr<UctSide> side(new UctSide(resource));
  const ucs::config::Sources sources = process_sources();
  Result<std::unique_ptr<uct::MemoryDomain>> md =
      resource.component->md_open(resource.md_name, sources);
  if (!md.ok()) return fail("cannot open memory domain '" + resource.md_name + "'", md.status());
  side->md_ = std::move(*md);
  uct::IfaceParams params;
  params.tl_name = resource.tl.tl_name;
  params.dev_name = resource.tl.dev_name;
  params.async = async;
  params.err_handler = std::move(on_error);
  Result<std::unique_ptr<uct::Iface>> iface = side->md_->iface_open(params);
  if (!iface.ok()) {
    return fail("cannot open " + resource.tl.tl_name + " on " + resource.tl.dev_name,
                iface.status());
  }
  side->iface_ = std::move(*iface);
  side->attr_ = side->iface_->query();
  side->alloc_ = alloc;
  side->md_allocated_ = alloc == Alloc::Md && (side->md_->query().flags & uct::kMdAlloc);
  for (int i = 0; i < kBufs; ++i) {
    const Status s = side->make_buf(i, lengths[i], why);
    if (is_error(s)) return s;
  }
  return side;
}

// Buffer `i`: the md's memory, or heap memory (huge pages but with --alloc
// pages) registered with the md.
Status UctSide::make_buf(int i, size_t length, std::string* why) {
  auto fail = [why](std::string text, Status s) {
    *why = std::move(text) + ": " + ucs::status_string(s);
    MC_LOG(error) << *why;
    return s;
  };
  const std::string bytes = std::to_string(length) + " bytes";
  Result<std::unique_ptr<uct::MemHandle>> memh = Status::NoMemory;
  if (md_allocated_) {
    memh = md_->mem_alloc(length, uct::MemType::Host, uct::kAccessAll);
    if (!memh.ok()) return fail("cannot allocate " + bytes + " with " + md_->name(), memh.status());
    bufs_[i] = static_cast<uint8_t*>((*memh)->address());
    std::memset(bufs_[i], 0, length);
  } else {
    heap_[i] = std::make_unique<AlignedBuffer>(length, alloc_, uint8_t{0});
    if (!heap_[i]->data()) return fail("cannot allocate a buffer of " + bytes, Status::NoMemory);
    bufs_[i] = heap_[i]->data();
    memh = md_->mem_reg(bufs_[i], heap_[i]->length(), uct::kAccessAll);
    if (!memh.ok()) return fail("cannot register " + bytes + " with " + md_->name(), memh.status());
  }
  memh_[i] = std::move(*memh);
  return Status::Ok;
}

Result<std::vector<uint8_t>> UctSide::pack_rkey(Buf b) const {
  std::vector<uint8_t> packed;
  MC_RETURN_IF_ERROR(md_->mkey_pack(*memh_[static_cast<int>(b)], &packed));
  return packed;
}

Status UctSide::connect(std::span<const uint8_t> dev_addr, std::span<const uint8_t> iface_addr,
                        std::span<const uint8_t> peer_recv_rkey,
                        std::span<const uint8_t> peer_send_rkey, std::string* why) {
  const std::string name = resource_.tl.tl_name + "/" + resource_.tl.dev_name;
  std::string reason;
  if (!iface_->is_reachable(dev_addr, iface_addr, &reason)) {
    *why = name + " cannot reach the peer: " + reason;
    MC_LOG(error) << *why;
    return Status::Unreachable;
  }
  Result<std::unique_ptr<uct::Rkey>> recv_rkey = md_->rkey_unpack(peer_recv_rkey);
  Result<std::unique_ptr<uct::Rkey>> send_rkey = md_->rkey_unpack(peer_send_rkey);
  Result<std::unique_ptr<uct::Endpoint>> ep =
      recv_rkey.ok() && send_rkey.ok() ? iface_->ep_create(dev_addr, iface_addr)
                                       : Result<std::unique_ptr<uct::Endpoint>>(Status::BadData);
  if (!ep.ok()) {
    *why = name + " cannot connect to the peer: " + ucs::status_string(ep.status());
    MC_LOG(error) << *why;
    return ep.status();
  }
  peer_recv_rkey_ = std::move(*recv_rkey);
  peer_send_rkey_ = std::move(*send_rkey);
  ep_ = std::move(*ep);
  return Status::Ok;
}

}  // namespace mc::perf
