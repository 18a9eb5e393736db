// SPDX-License-Identifier: Apache-2.0
// A component with one memory domain, named like the component and configured
// by one table: what most transport modules need, written once.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ucs/config/registry.h"
#include "uct/api/component.h"

namespace mc::uct {

/// `MdT` is constructed from a `ConfigT` read from `table` (through `read`
/// when the transport validates more than the table's parsers do).
template <typename ConfigT, typename MdT>
class SingleMdComponent : public Component {
 public:
  using TableFn = const ucs::config::Table& (*)();
  using ReadFn = Result<ConfigT> (*)(const ucs::config::Sources& sources);

  SingleMdComponent(std::string name, TableFn table, ReadFn read = nullptr)
      : name_(std::move(name)), table_(table), read_(read) {}

  const std::string& name() const override { return name_; }
  std::vector<std::string> md_names() const override { return {name_}; }

  Result<std::unique_ptr<MemoryDomain>> md_open(const std::string& md_name,
                                                const ucs::config::Sources& sources) override {
    if (md_name != name_) return Status::NoElem;
    Result<ConfigT> config =
        read_ ? read_(sources) : ucs::config::read_table<ConfigT>(table_(), sources);
    if (!config.ok()) return config.status();
    return std::unique_ptr<MemoryDomain>(new MdT(std::move(*config)));
  }

  void register_config(ucs::config::Registry& registry) const override {
    registry.add<ConfigT>(table_());
  }

 private:
  std::string name_;
  TableFn table_;
  ReadFn read_;
};

}  // namespace mc::uct
