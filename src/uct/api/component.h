// SPDX-License-Identifier: Apache-2.0
// Component: a transport family (self, tcp, sm, ...) as a loadable module
// provides it; it lists and opens memory domains.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ucs/config/registry.h"
#include "uct/api/md.h"

namespace mc::uct {

class Component {
 public:
  virtual ~Component() = default;

  /// The family name, e.g. "tcp".
  virtual const std::string& name() const = 0;

  /// Names of the memory domains this component can open; empty when its
  /// hardware is absent.
  virtual std::vector<std::string> md_names() const = 0;

  /// Why md_names() is empty when it is (e.g. "no CUDA device: <cuda error
  /// text>"); empty otherwise. mc_info -d prints it.
  virtual std::string unavailable_reason() const { return {}; }

  /// Opens a memory domain. NoElem for an unknown name, NoDevice when the
  /// hardware went away, InvalidParam for an invalid configuration.
  virtual Result<std::unique_ptr<MemoryDomain>> md_open(const std::string& md_name,
                                                        const ucs::config::Sources& sources) = 0;

  /// Registers the component's configuration tables (mc_info -c shows them).
  virtual void register_config(ucs::config::Registry& registry) const = 0;
};

}  // namespace mc::uct
