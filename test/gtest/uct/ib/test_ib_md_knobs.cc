// SPDX-License-Identifier: Apache-2.0
// Knobs of the ib memory domain from the Mooncake document, on the soft
// provider: MC_IB_PCI_RELAXED_ORDERING asks every host registration for
// relaxed ordering (ibv_reg_mr_iova2) and mc_info -d's note says so, or why
// not; MC_IB_TC=-1, its default, leaves the traffic class to the device.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "ucs/config/table.h"
#include "uct/ib/base/ib_md.h"
#include "uct/ib/soft/soft_fabric.h"
#include "uct/ib/soft_verbs_fixture.h"

namespace mc::uct::ib::soft {
namespace {

using ucs::Result;
using ucs::Status;

class HostMd : public IbMd {
 public:
  using IbMd::IbMd;
  const char* tl_name() const override { return "rc_verbs"; }
  Result<std::unique_ptr<Iface>> iface_open(const IfaceParams&) override {
    return Status::Unsupported;
  }
};

class IbMdKnobs : public SoftVerbsFixture {
 protected:
  std::unique_ptr<HostMd> open_md(std::map<std::string, std::string> knobs,
                                  const VerbsOps* ops = nullptr) {
    knobs["MC_IB_PROVIDER"] = "soft";
    knobs["MC_IB_SOFT_FABRIC"] = fabric_;
    Result<ucs::config::Sources> src = ucs::config::Sources::from(knobs, {});
    EXPECT_TRUE(src.ok());
    if (!src.ok()) return nullptr;
    Result<IbConfig> cfg = ucs::config::read_table<IbConfig>(ib_config_table(), *src);
    EXPECT_TRUE(cfg.ok());
    if (!cfg.ok()) return nullptr;
    return std::make_unique<HostMd>("rc_verbs", ops ? ops : v_, *cfg, "");
  }
  static std::string relaxed_note(const IbMd& md) {
    for (const std::string& n : md.query().notes) {
      if (n.starts_with("PCIe relaxed ordering")) return n;
    }
    return "";
  }
  // The access flags the soft provider recorded for each MR of `memh`.
  std::vector<uint32_t> mr_access(const MemHandle& memh) {
    std::vector<uint32_t> out;
    const auto* h = dynamic_cast<const IbMemHandle*>(&memh);
    Result<Fabric*> f = Fabric::open(fabric_);
    if (!h || !f.ok()) return out;
    Fabric::Guard g(*f);
    for (const ibv_mr* mr : h->region().mrs) {
      const MrSlot* m = (*f)->mr_find(mr->lkey);
      out.push_back(m ? m->access : 0);
    }
    return out;
  }
};

TEST_F(IbMdKnobs, RelaxedOrderingIsAskedOfEveryHostRegistrationWhenSet) {
  std::vector<uint8_t> buf(8192, 1);
  std::unique_ptr<HostMd> on = open_md({{"MC_IB_PCI_RELAXED_ORDERING", "y"}});
  ASSERT_TRUE(on);
  EXPECT_TRUE(on->relaxed_ordering());
  EXPECT_EQ(relaxed_note(*on).find("PCIe relaxed ordering: on"), 0u) << relaxed_note(*on);
  Result<std::unique_ptr<MemHandle>> h = on->mem_reg(buf.data(), buf.size(), kAccessAll);
  ASSERT_TRUE(h.ok());
  const std::vector<uint32_t> with = mr_access(**h);
  ASSERT_EQ(with.size(), 2u) << "one MR per device";
  for (uint32_t a : with) EXPECT_TRUE(a & IBV_ACCESS_RELAXED_ORDERING) << std::hex << a;
  h->reset();

  std::unique_ptr<HostMd> off = open_md({});
  ASSERT_TRUE(off);
  EXPECT_FALSE(off->relaxed_ordering());
  EXPECT_EQ(relaxed_note(*off), "PCIe relaxed ordering: off (MC_IB_PCI_RELAXED_ORDERING=n)");
  h = off->mem_reg(buf.data(), buf.size(), kAccessAll);
  ASSERT_TRUE(h.ok());
  for (uint32_t a : mr_access(**h)) EXPECT_FALSE(a & IBV_ACCESS_RELAXED_ORDERING) << std::hex << a;
  h->reset();

  // A verbs library without ibv_reg_mr_iova2 (rdma-core before 28): off,
  // and the note says why.
  VerbsOps old = *v_;
  old.reg_mr_iova2 = nullptr;
  std::unique_ptr<HostMd> unsupported = open_md({{"MC_IB_PCI_RELAXED_ORDERING", "1"}}, &old);
  ASSERT_TRUE(unsupported);
  EXPECT_FALSE(unsupported->relaxed_ordering());
  EXPECT_NE(relaxed_note(*unsupported).find("has no ibv_reg_mr_iova2"), std::string::npos)
      << relaxed_note(*unsupported);
  h = unsupported->mem_reg(buf.data(), buf.size(), kAccessAll);
  ASSERT_TRUE(h.ok());
  for (uint32_t a : mr_access(**h)) EXPECT_FALSE(a & IBV_ACCESS_RELAXED_ORDERING);
}

TEST(IbConfigKnobs, TrafficClassMinusOneIsTheDevicesDefault) {
  auto read = [](const std::map<std::string, std::string>& vars, std::string* error) {
    return ucs::config::read_table<IbConfig>(ib_config_table(),
                                             *ucs::config::Sources::from(vars, {}), error);
  };
  std::string error;
  Result<IbConfig> c = read({}, &error);
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->traffic_class.has_value()) << "default -1";
  EXPECT_FALSE(c->relaxed_ordering);
  c = read({{"MC_IB_TC", "-1"}}, &error);
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->traffic_class.has_value());
  c = read({{"MC_IB_TC", "106"}}, &error);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->traffic_class, std::optional<uint64_t>(106));
  for (const char* bad : {"256", "-2", "x"}) {
    EXPECT_EQ(read({{"MC_IB_TC", bad}}, &error).status(), Status::InvalidParam) << bad;
    EXPECT_NE(error.find("MC_IB_TC"), std::string::npos) << error;
  }
}

}  // namespace
}  // namespace mc::uct::ib::soft
