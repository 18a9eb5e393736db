// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: the packed UCP rkey container, and every loaded
// transport's rkey_unpack (envelope and private payload) on the same bytes.
// Set MC_MODULE_DIR to the build's modules/ directory.
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ucp/core/rkey_container.h"
#include "ucs/config/sources.h"
#include "uct/api/component.h"
#include "uct/base/component_loader.h"

namespace {

std::vector<std::unique_ptr<mc::uct::MemoryDomain>>& memory_domains() {
  static auto* mds = [] {
    auto* out = new std::vector<std::unique_ptr<mc::uct::MemoryDomain>>();
    auto sources = mc::ucs::config::Sources::from({}, {});
    if (!sources.ok()) std::abort();
    for (mc::uct::Component* c : mc::uct::load_components()) {
      for (const std::string& name : c->md_names()) {
        auto md = c->md_open(name, *sources);
        if (md.ok()) out->push_back(std::move(*md));
      }
    }
    return out;
  }();
  return *mds;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const uint8_t> in(data, size);
  std::string why;
  auto container = mc::ucp::rkey_container_unpack(in, &why);
  if (container.ok()) {
    if (mc::ucp::rkey_container_pack(*container) != std::vector<uint8_t>(data, data + size))
      std::abort();
    for (const auto& [md_name, key] : container->entries) {
      for (auto& md : memory_domains()) {
        if (md->name() == md_name) (void)md->rkey_unpack(key);
      }
    }
  } else if (why.empty()) {
    std::abort();
  }
  for (auto& md : memory_domains()) (void)md->rkey_unpack(in);
  return 0;
}
