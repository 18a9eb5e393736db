// SPDX-License-Identifier: Apache-2.0
// mc_uct_check's harness.
#include "tools/uct_check/check_harness.h"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <thread>

#include "uct/base/component_loader.h"

namespace mc::uct::check {

bool find_resource(const std::string& tl_name, const std::string& dev, Resource* out,
                   std::string* why) {
  const Result<ucs::config::Sources> sources = ucs::config::Sources::from_process();
  if (!sources.ok()) {
    *why = "cannot read the configuration";
    return false;
  }
  std::vector<std::string> seen;
  // Without a device named, a network transport runs on loopback; one that
  // has no loopback device (RDMA NICs loop back inside) on its first device.
  std::optional<Resource> first_net;
  for (Component* c : load_components()) {
    for (const std::string& md_name : c->md_names()) {
      Result<std::unique_ptr<MemoryDomain>> md = c->md_open(md_name, *sources);
      if (!md.ok()) continue;
      for (const TlResource& tl : (*md)->query_tl_resources()) {
        seen.push_back(tl.tl_name + "/" + tl.dev_name);
        if (tl.tl_name != tl_name) continue;
        if (!dev.empty() ? tl.dev_name != dev
                         : tl.dev_type == DeviceType::Net && tl.dev_name != "lo") {
          if (dev.empty() && !first_net) first_net = Resource{c, md_name, tl};
          continue;
        }
        *out = Resource{c, md_name, tl};
        return true;
      }
    }
  }
  if (first_net) {
    *out = *first_net;
    return true;
  }
  *why = "no transport '" + tl_name + "'" + (dev.empty() ? "" : " on device '" + dev + "'") +
         " among the loaded modules; found:";
  for (const std::string& s : seen) *why += " " + s;
  *why += " (see mc_info -m for modules that did not load)";
  return false;
}

std::unique_ptr<Entity> Entity::create(const Resource& r, std::string* why,
                                       ErrorHandler on_error) {
  auto e = std::make_unique<Entity>();
  const ucs::config::Sources sources = ucs::config::Sources::from_process().value_or({});
  Result<std::unique_ptr<MemoryDomain>> md = r.component->md_open(r.md_name, sources);
  if (!md.ok()) {
    *why = std::string("md_open: ") + ucs::status_string(md.status());
    return nullptr;
  }
  e->md_ = std::move(*md);
  IfaceParams params;
  params.tl_name = r.tl.tl_name;
  params.dev_name = r.tl.dev_name;
  params.err_handler = std::move(on_error);
  Result<std::unique_ptr<Iface>> iface = e->md_->iface_open(params);
  if (!iface.ok()) {
    *why = std::string("iface_open: ") + ucs::status_string(iface.status());
    return nullptr;
  }
  e->iface_ = std::move(*iface);
  e->attr_ = e->iface_->query();
  return e;
}

uint8_t pattern(uint64_t seed, size_t i) {
  return static_cast<uint8_t>((seed * 131 + i * 7 + (i >> 8)) & 0xff);
}

Buffer::Buffer(Entity& e, size_t length, unsigned access) : data(std::max<size_t>(length, 1)) {
  data.resize(length);
  if (length == 0) return;
  Result<std::unique_ptr<MemHandle>> h = e.md().mem_reg(data.data(), length, access);
  if (h.ok()) memh = std::move(*h);
}

void Buffer::fill(uint64_t seed) {
  for (size_t i = 0; i < data.size(); ++i) data[i] = pattern(seed, i);
}

ptrdiff_t Buffer::check(uint64_t seed) const {
  for (size_t i = 0; i < data.size(); ++i) {
    if (data[i] != pattern(seed, i)) return static_cast<ptrdiff_t>(i);
  }
  return -1;
}

std::vector<uint8_t> Buffer::packed_rkey(Entity& e) const {
  std::vector<uint8_t> out;
  if (memh) (void)e.md().mkey_pack(*memh, &out);
  return out;
}

WaitCompletion::WaitCompletion() {
  comp.arg = this;
  comp.func = [](Completion* c) { static_cast<WaitCompletion*>(c->arg)->fired = true; };
}

bool progress_until(const std::function<bool()>& done, const Entities& entities,
                    std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  unsigned idle = 0;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    unsigned events = 0;
    for (Entity* e : entities) events += e->iface().progress();
    if (events == 0 && ++idle > 64) std::this_thread::yield();
  }
  return true;
}

Status wait_op(Status posted, WaitCompletion& c, const Entities& entities) {
  if (posted != Status::InProgress) return posted;
  if (!progress_until([&] { return c.fired; }, entities)) return Status::Timeout;
  return c.comp.status;
}

Status flush_and_wait(Endpoint& ep, const Entities& entities) {
  WaitCompletion c;
  Status s = ep.flush(&c.comp);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (s == Status::NoResource && std::chrono::steady_clock::now() < deadline) {
    for (Entity* e : entities) e->iface().progress();
    s = ep.flush(&c.comp);
  }
  return wait_op(s, c, entities);
}

std::vector<size_t> test_sizes(const OpLimits& limits, size_t min, size_t max) {
  const size_t candidates[] = {0,
                               1,
                               7,
                               8,
                               limits.max_short,
                               limits.max_short + 1,
                               limits.max_bcopy,
                               size_t{1} << 20,
                               size_t{64} << 20};
  std::vector<size_t> out;
  for (size_t s : candidates) {
    if (s >= min && s <= max && std::find(out.begin(), out.end(), s) == out.end()) {
      out.push_back(s);
    }
  }
  return out;
}

void Table::add(const std::string& op, size_t size, bool pass, const std::string& why) {
  rows_.push_back(Row{op, std::to_string(size), pass ? "pass" : "FAIL", why});
  ++(pass ? passed_ : failed_);
}

void Table::skip(const std::string& op, const std::string& why) {
  rows_.push_back(Row{op, "-", "skip", why});
}

void Table::print() const {
  std::printf("%-28s | %10s | %s\n", "operation", "size", "result");
  std::printf("%s\n", std::string(56, '-').c_str());
  for (const Row& r : rows_) {
    std::printf("%-28s | %10s | %s%s%s\n", r.op.c_str(), r.size.c_str(), r.result.c_str(),
                r.why.empty() ? "" : ": ", r.why.c_str());
  }
  std::printf("%zu passed, %zu failed\n", passed_, failed_);
}

}  // namespace mc::uct::check
