// SPDX-License-Identifier: Apache-2.0
// Rails near the memory's NUMA node (devices placed by the sysfs fixture of
// ucs/topo_fixture), and protocol tables per memory type with the "memory
// type unsupported" rejection.
#include <gtest/gtest.h>

#include <sstream>

#include "ucp/api/ucp.h"
#include "ucp/proto/ep_protocols.h"
#include "ucp/wireup/lane_select.h"
#include "ucs/topo/topo.h"
#include "uct/base/component_loader.h"

namespace mc::ucp::test {
namespace {

using namespace wireup;
using ucs::Status;

const std::string kFixture = MC_TEST_SRCDIR "/ucs/topo_fixture";

constexpr uint64_t kAllCaps = uct::kCapAmShort | uct::kCapAmBcopy | uct::kCapAmZcopy |
                              uct::kCapPutShort | uct::kCapPutBcopy | uct::kCapPutZcopy |
                              uct::kCapGetBcopy | uct::kCapGetZcopy | uct::kCapConnectToIface;

LocalResource nic(const std::string& dev, double bandwidth, int numa_node = -1) {
  LocalResource l;
  l.tl_name = l.md_name = "rc_mlx5";
  l.dev_name = dev;
  l.attr.cap = kAllCaps;
  l.attr.latency = uct::LinearFunc{2e-6, 0};
  l.attr.bandwidth = uct::Bandwidth{bandwidth, 0};
  l.attr.overhead = 50e-9;
  l.attr.put = l.attr.get = l.attr.am = uct::OpLimits{128, 8192, 0, 1u << 30, 8, 64};
  l.numa_node = numa_node;
  return l;
}

AddressEntry peer_of(const LocalResource& l) {
  AddressEntry e;
  e.component = e.md_name = e.tl_name = l.tl_name;
  e.dev_name = l.dev_name;
  e.summary =
      IfaceSummary{l.attr.cap, l.attr.latency.c,       l.attr.bandwidth.total(), l.attr.overhead,
                   0,          l.attr.access_mem_types};
  return e;
}

LaneSelection select(const std::vector<LocalResource>& local, size_t rails, int mem_node) {
  std::vector<AddressEntry> remote;
  for (const LocalResource& l : local) remote.push_back(peer_of(l));
  LaneSelectParams p;
  p.max_rma_rails = rails;
  p.mem_numa_node = mem_node;
  auto reach = [&](size_t li, size_t ri, std::string* why) {
    return local[li].dev_name == remote[ri].dev_name || (*why = "other fabric", false);
  };
  return select_lanes(local, remote, reach, p);
}

// mlx5_0 (node 0) is a little faster than mlx5_1 (node 1) in the fixture.
std::vector<LocalResource> fixture_nics() {
  auto topo = ucs::Topology::discover(kFixture);
  EXPECT_TRUE(topo.ok());
  std::vector<LocalResource> local;
  for (const auto& [name, bw] :
       {std::pair<std::string, double>{"mlx5_0", 26e9}, {"mlx5_1", 25e9}}) {
    const ucs::TopoDevice* d = topo.ok() ? topo->find(name) : nullptr;
    local.push_back(nic(name, bw, d ? d->numa_node : -1));
  }
  return local;
}

TEST(UcpTopoRails, FixturePlacesTheNics) {
  const std::vector<LocalResource> local = fixture_nics();
  EXPECT_EQ(local[0].numa_node, 0);
  EXPECT_EQ(local[1].numa_node, 1);
}

TEST(UcpTopoRails, NearDeviceFirstWhenTheMemoryNodeIsKnown) {
  const std::vector<LocalResource> local = fixture_nics();
  auto dev = [&](const LaneSelection& s) {
    return local[s.lanes[s.rma_bw_lanes.at(0)].local].dev_name;
  };
  EXPECT_EQ(dev(select(local, 1, -1)), "mlx5_0");  // no preference: the faster
  EXPECT_EQ(dev(select(local, 1, 0)), "mlx5_0");
  const LaneSelection s1 = select(local, 1, 1);
  EXPECT_EQ(dev(s1), "mlx5_1");  // near the memory, though slower
  bool why = false;
  for (const Rejection& r : s1.rejections) {
    why = why || (r.role == "rma-bw" && r.reason == RejectReason::RailLimit &&
                  r.detail.find("NUMA node 0, the memory on node 1") != std::string::npos);
  }
  EXPECT_TRUE(why) << "the far rail's rejection does not say why";
  // Both rails when allowed: the near one first.
  const LaneSelection s2 = select(local, 2, 1);
  ASSERT_EQ(s2.rma_bw_lanes.size(), 2u);
  EXPECT_EQ(dev(s2), "mlx5_1");
}

TEST(UcpTopoRails, ContextAndWorkerUseTheTopology) {
  auto sources =
      ucs::config::Sources::from({{"MC_TLS", "self"}, {"MC_TOPO_SYSFS_ROOT", kFixture}}, {});
  ASSERT_TRUE(sources.ok());
  ContextParams params;
  params.sources = &*sources;
  auto ctx = Context::create(params);
  ASSERT_TRUE(ctx.ok());
  ASSERT_NE((*ctx)->topology(), nullptr);
  uct::TlResource tl;
  tl.tl_name = "tcp";
  tl.dev_name = "eth1";
  EXPECT_EQ((*ctx)->numa_node_of(tl), 1);
  tl.numa_node = 0;  // the transport's own answer wins
  EXPECT_EQ((*ctx)->numa_node_of(tl), 0);
  WorkerParams wp;
  wp.numa_node = 1;
  auto w = Worker::create(**ctx, wp);
  ASSERT_TRUE(w.ok());
  EXPECT_EQ((*w)->numa_node(), 1);
}

TEST(UcpMemTypeTables, TablesFollowTheLanesThatCanAccessTheMemory) {
  std::vector<LocalResource> local = {nic("mlx5_0", 26e9), nic("mlx5_1", 25e9)};
  local[1].attr.access_mem_types |= uct::mem_type_bit(uct::MemType::Cuda);
  const LaneSelection sel = select(local, 2, -1);
  const proto::EpProtocols p = proto::EpProtocols::build(sel, local, proto::EpProtoParams{});
  const proto::ProtoTable& host = p.table(proto::Op::Put, true);
  const proto::ProtoTable& cuda = p.table(proto::Op::Put, true, uct::MemType::Cuda);
  ASSERT_FALSE(host.ranges().empty());
  ASSERT_FALSE(cuda.ranges().empty());
  for (const proto::ProtoRange& r : cuda.ranges()) {
    for (size_t lane : r.lanes) EXPECT_EQ(local[sel.lanes[lane].local].dev_name, "mlx5_1");
    EXPECT_NE(r.kind, proto::ProtoKind::MultiZcopy) << "one lane reaches cuda: no rails";
  }
  EXPECT_TRUE(p.table(proto::Op::Put, true, uct::MemType::CudaManaged).ranges().empty());
  EXPECT_TRUE(p.table(proto::Op::Put, true, uct::MemType::Unknown).ranges().empty());
  std::ostringstream os;
  p.print(os);
  EXPECT_NE(os.str().find("with a registered cuda buffer"), std::string::npos) << os.str();
  EXPECT_NE(os.str().find("cuda-managed memory: unsupported (memory type"), std::string::npos)
      << os.str();
}

TEST(UcpMemTypeTables, EndpointRejectsMemoryNoLaneCanAccess) {
  if (!uct::find_component("tcp")) GTEST_SKIP() << "tcp is not available";
  auto sources = ucs::config::Sources::from({{"MC_TLS", "tcp"}, {"MC_NET_DEVICES", "lo"}}, {});
  ASSERT_TRUE(sources.ok());
  ContextParams params;
  params.sources = &*sources;
  auto ctx = Context::create(params);
  ASSERT_TRUE(ctx.ok());
  auto a = Worker::create(**ctx);
  auto b = Worker::create(**ctx);
  ASSERT_TRUE(a.ok() && b.ok());
  auto ep = (*a)->ep_create((*b)->address());
  ASSERT_TRUE(ep.ok());
  std::vector<uint8_t> target(4096), src(4096, 1);
  auto tmh = MemHandle::map(**ctx, target.data(), target.size());
  ASSERT_TRUE(tmh.ok());
  auto rkey = (*ep)->rkey_unpack(*(*tmh)->rkey_pack());
  ASSERT_TRUE(rkey.ok());
  RequestParams rp;
  rp.mem_type = uct::MemType::Cuda;
  const uint64_t addr = reinterpret_cast<uintptr_t>(target.data());
  EXPECT_EQ((*ep)->put_nbx(src.data(), src.size(), addr, **rkey, rp).status(), Status::Unsupported);
  EXPECT_EQ((*ep)->am_send_nbx(1, src.data(), 10, rp).status(), Status::Unsupported);
  rp.mem_type = uct::MemType::Host;
  auto r = (*ep)->put_nbx(src.data(), src.size(), addr, **rkey, rp);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)->wait(), Status::Ok);
  ep->reset();
}

}  // namespace
}  // namespace mc::ucp::test
