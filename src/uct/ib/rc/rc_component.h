// SPDX-License-Identifier: Apache-2.0
// The component and memory domain of an RC transport: what rc_verbs and
// rc_mlx5 share, told apart by their name, the iface they open and whether
// a device must speak mlx5 direct verbs.
#pragma once

#include <memory>
#include <string>

#include "uct/api/component.h"
#include "uct/ib/base/ib_md.h"
#include "uct/ib/rc/rc_config.h"
#include "uct/ib/rc/rc_iface.h"

namespace mc::uct::ib::rc {

struct RcTransport {
  const char* name;  ///< "rc_verbs"
  Result<std::unique_ptr<RcIface>> (*iface_create)(IbMd* md, size_t dev_index,
                                                   const RcConfig& config,
                                                   const IfaceParams& params);
  bool need_mlx5;  ///< offer only devices with mlx5 direct verbs
};

class RcComponent : public Component {
 public:
  explicit RcComponent(const RcTransport& transport)
      : transport_(transport), name_(transport.name) {}

  const std::string& name() const override { return name_; }
  /// The md exists only where a device does, so mc_info and UCP see the
  /// reason instead of an empty md.
  std::vector<std::string> md_names() const override;
  std::string unavailable_reason() const override { return why_; }
  Result<std::unique_ptr<MemoryDomain>> md_open(const std::string& md_name,
                                                const ucs::config::Sources& sources) override;
  /// The ib and rc tables, once per process however many RC modules load.
  void register_config(ucs::config::Registry& registry) const override;

 private:
  Result<std::unique_ptr<MemoryDomain>> open(const ucs::config::Sources& sources,
                                             std::string* why) const;

  RcTransport transport_;
  const std::string name_;
  mutable std::string why_;
};

}  // namespace mc::uct::ib::rc
