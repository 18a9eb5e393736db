// SPDX-License-Identifier: Apache-2.0
// Lane selection on synthetic attributes: no transport is opened.
#include <gtest/gtest.h>

#include <sstream>

#include "ucp/wireup/lane_select.h"

namespace mc::ucp::test {
namespace {

using namespace wireup;

constexpr uint64_t kAllCaps = uct::kCapAmShort | uct::kCapAmBcopy | uct::kCapAmZcopy |
                              uct::kCapPutShort | uct::kCapPutBcopy | uct::kCapPutZcopy |
                              uct::kCapGetBcopy | uct::kCapGetZcopy | uct::kCapConnectToIface;

LocalResource nic(const std::string& dev, double latency, double bandwidth,
                  const std::string& tl = "rc_mlx5") {
  LocalResource l;
  l.tl_name = tl;
  l.dev_name = dev;
  l.md_name = tl;
  l.attr.cap = kAllCaps;
  l.attr.latency = uct::LinearFunc{latency, 0};
  l.attr.bandwidth = uct::Bandwidth{bandwidth, 0};
  l.attr.overhead = 50e-9;
  l.attr.put = l.attr.get = l.attr.am = uct::OpLimits{128, 8192, 0, 1u << 30, 8, 64};
  return l;
}

AddressEntry peer_of(const LocalResource& l) {
  AddressEntry e;
  e.component = e.md_name = e.tl_name = l.tl_name;
  e.dev_name = l.dev_name;
  e.summary = IfaceSummary{l.attr.cap,
                           l.attr.latency.c,
                           l.attr.bandwidth.total(),
                           l.attr.overhead,
                           0,
                           uct::mem_type_bit(uct::MemType::Host)};
  return e;
}

// Each local NIC reaches the peer's NIC of the same name only (one fabric each).
ReachFn same_fabric(const std::vector<LocalResource>& local,
                    const std::vector<AddressEntry>& remote) {
  return [&local, &remote](size_t li, size_t ri, std::string* reason) {
    if (local[li].dev_name == remote[ri].dev_name) return true;
    *reason = "different fabric";
    return false;
  };
}

std::string dev_of(const LaneSelection& s, const std::vector<LocalResource>& local, size_t lane) {
  return local[s.lanes[lane].local].dev_name;
}

TEST(UcpLanes, FasterNicWinsSmallMessagesOnlyWithLowerLatency) {
  // nic0: 25 GB/s but 3 us; nic1: 12.5 GB/s and 1 us.
  std::vector<LocalResource> local = {nic("nic0", 3e-6, 25e9), nic("nic1", 1e-6, 12.5e9)};
  std::vector<AddressEntry> remote = {peer_of(local[0]), peer_of(local[1])};
  LaneSelection s = select_lanes(local, remote, same_fabric(local, remote), {});
  ASSERT_GE(s.am_lane, 0);
  EXPECT_EQ(dev_of(s, local, static_cast<size_t>(s.am_lane)), "nic1");  // lower latency
  ASSERT_EQ(s.rma_lanes.size(), 1u);
  EXPECT_EQ(dev_of(s, local, s.rma_lanes[0]), "nic0");  // 256 KiB: bandwidth wins
  ASSERT_GE(s.rma_bw_lanes.size(), 1u);
  EXPECT_EQ(dev_of(s, local, s.rma_bw_lanes[0]), "nic0");

  // Make the fast NIC also the lower-latency one: it takes small messages too.
  local[0].attr.latency.c = 0.5e-6;
  remote[0] = peer_of(local[0]);
  s = select_lanes(local, remote, same_fabric(local, remote), {});
  EXPECT_EQ(dev_of(s, local, static_cast<size_t>(s.am_lane)), "nic0");
}

TEST(UcpLanes, TwoEqualNicsAreBothBandwidthLanes) {
  std::vector<LocalResource> local = {nic("nic0", 1e-6, 12.5e9), nic("nic1", 1e-6, 12.5e9)};
  std::vector<AddressEntry> remote = {peer_of(local[0]), peer_of(local[1])};
  LaneSelection s = select_lanes(local, remote, same_fabric(local, remote), {});
  ASSERT_EQ(s.rma_bw_lanes.size(), 2u);
  EXPECT_NE(dev_of(s, local, s.rma_bw_lanes[0]), dev_of(s, local, s.rma_bw_lanes[1]));
  // Ties go to the lower index.
  EXPECT_EQ(dev_of(s, local, static_cast<size_t>(s.am_lane)), "nic0");
}

TEST(UcpLanes, RailLimitAndDistinctDevices) {
  // Full mesh: each local NIC reaches both remote NICs.
  std::vector<LocalResource> local = {nic("nic0", 1e-6, 12.5e9), nic("nic1", 1e-6, 12.5e9)};
  std::vector<AddressEntry> remote = {peer_of(local[0]), peer_of(local[1])};
  ReachFn all = [](size_t, size_t, std::string*) { return true; };
  LaneSelectParams p;
  p.max_rma_rails = 2;
  LaneSelection s = select_lanes(local, remote, all, p);
  ASSERT_EQ(s.rma_bw_lanes.size(), 2u);
  const Lane& a = s.lanes[s.rma_bw_lanes[0]];
  const Lane& b = s.lanes[s.rma_bw_lanes[1]];
  EXPECT_NE(a.local, b.local);
  EXPECT_NE(a.remote, b.remote);
  p.max_rma_rails = 1;
  s = select_lanes(local, remote, all, p);
  EXPECT_EQ(s.rma_bw_lanes.size(), 1u);
  bool rail_limit = false;
  for (const Rejection& r : s.rejections) rail_limit |= r.reason == RejectReason::RailLimit;
  EXPECT_TRUE(rail_limit);
}

TEST(UcpLanes, SharedMemoryTakesNoNetworkRailBesideIt) {
  // sm at 10 GB/s and tcp over lo at 4 GB/s to a peer on this host: the
  // bandwidth ratio alone would make both rails.
  std::vector<LocalResource> local = {nic("memory", 0.3e-6, 10e9, "sm"),
                                      nic("lo", 10e-6, 4e9, "tcp")};
  local[0].dev_type = uct::DeviceType::Shm;
  std::vector<AddressEntry> remote = {peer_of(local[0]), peer_of(local[1])};
  LaneSelectParams p;
  p.max_rma_rails = 2;
  LaneSelection s = select_lanes(local, remote, same_fabric(local, remote), p);
  ASSERT_EQ(s.rma_bw_lanes.size(), 1u);
  EXPECT_EQ(dev_of(s, local, s.rma_bw_lanes[0]), "memory");
  bool said = false;
  for (const Rejection& r : s.rejections) {
    said |= r.role == "rma-bw" && r.reason == RejectReason::SharedMemory &&
            r.detail.find("sm/memory") != std::string::npos;
  }
  EXPECT_TRUE(said);
  // Without the shared-memory rail, the network rails pair as before.
  local[0] = nic("eth0", 10e-6, 4e9, "tcp");
  remote[0] = peer_of(local[0]);
  s = select_lanes(local, remote, same_fabric(local, remote), p);
  EXPECT_EQ(s.rma_bw_lanes.size(), 2u);
}

TEST(UcpLanes, PeerInThisNetworkNamespaceGetsOneLoopbackRail) {
  // tcp on lo and on eth0 to a peer in this network namespace: both routes
  // are the kernel's loopback, so one rail unless MC_LOOPBACK_RAILS allows more.
  std::vector<LocalResource> local = {nic("lo", 10e-6, 4e9, "tcp"), nic("eth0", 10e-6, 4e9, "tcp")};
  for (LocalResource& l : local) l.attr.kernel_loopback = true;
  std::vector<AddressEntry> remote = {peer_of(local[0]), peer_of(local[1])};
  LaneSelectParams p;
  p.max_rma_rails = 2;
  EXPECT_EQ(select_lanes(local, remote, same_fabric(local, remote), p).rma_bw_lanes.size(), 2u)
      << "a peer elsewhere (no limit) gets both rails";
  p.loopback_rails = 1;
  LaneSelection s = select_lanes(local, remote, same_fabric(local, remote), p);
  ASSERT_EQ(s.rma_bw_lanes.size(), 1u);
  bool said = false;
  for (const Rejection& r : s.rejections) {
    said |= r.role == "rma-bw" && r.reason == RejectReason::Loopback &&
            r.detail.find("MC_LOOPBACK_RAILS=1 such") != std::string::npos;
  }
  EXPECT_TRUE(said);
  // Transports that do not go through the kernel (an RDMA NIC loops back in
  // hardware) keep their rails.
  for (LocalResource& l : local) l.attr.kernel_loopback = false;
  EXPECT_EQ(select_lanes(local, remote, same_fabric(local, remote), p).rma_bw_lanes.size(), 2u);
  // Eager rails too: the am lane counts as the first loopback rail.
  for (LocalResource& l : local) l.attr.kernel_loopback = true;
  p.max_eager_rails = 2;
  s = select_lanes(local, remote, same_fabric(local, remote), p);
  EXPECT_EQ(s.am_bw_lanes.size(), 1u);
  p.loopback_rails = 2;
  EXPECT_EQ(select_lanes(local, remote, same_fabric(local, remote), p).am_bw_lanes.size(), 2u);
}

TEST(UcpLanes, RejectionsKeepTheirReasons) {
  std::vector<LocalResource> local = {nic("nic0", 1e-6, 12.5e9), nic("nic1", 1e-6, 12.5e9),
                                      nic("memory", 0.3e-6, 10e9, "sm")};
  local[1].enabled = false;
  local[1].disabled_reason = "filtered by MC_TLS=^nic1";
  std::vector<AddressEntry> remote = {peer_of(local[0]), peer_of(local[1])};
  AddressEntry gpu = peer_of(nic("gpu0", 1e-6, 1e9, "cuda_ipc"));
  remote.push_back(gpu);
  ReachFn reach = [](size_t, size_t, std::string* reason) {
    *reason = "different fabric";
    return false;
  };
  LaneSelection s = select_lanes(local, remote, reach, {});
  EXPECT_TRUE(s.lanes.empty());
  std::ostringstream os;
  s.print(os);
  const std::string text = os.str();
  EXPECT_NE(text.find("filtered by MC_TLS=^nic1"), std::string::npos) << text;
  EXPECT_NE(text.find("unreachable: different fabric"), std::string::npos) << text;
  EXPECT_NE(text.find("no local cuda_ipc iface"), std::string::npos) << text;
  EXPECT_NE(text.find("the peer has no sm iface"), std::string::npos) << text;
}

TEST(UcpLanes, LowerScoreAndMemoryTypeAreReported) {
  std::vector<LocalResource> local = {nic("nic0", 1e-6, 12.5e9), nic("nic1", 2e-6, 12.5e9)};
  std::vector<AddressEntry> remote = {peer_of(local[0]), peer_of(local[1])};
  LaneSelectParams p;
  p.mem_type = uct::MemType::Cuda;
  local[1].attr.access_mem_types |= uct::mem_type_bit(uct::MemType::Cuda);
  LaneSelection s = select_lanes(local, remote, same_fabric(local, remote), p);
  ASSERT_EQ(s.rma_lanes.size(), 1u);
  EXPECT_EQ(dev_of(s, local, s.rma_lanes[0]), "nic1");  // only nic1 reaches cuda memory
  bool lower = false, memtype = false;
  for (const Rejection& r : s.rejections) {
    lower |= r.reason == RejectReason::LowerScore && r.role == "am";
    memtype |= r.role == "rma-bw" && r.reason == RejectReason::MemType;
  }
  EXPECT_TRUE(lower);
  EXPECT_TRUE(memtype);
}

TEST(UcpLanes, MuchSlowerRailIsNotUsed) {
  std::vector<LocalResource> local = {nic("nic0", 1e-6, 25e9), nic("nic1", 1e-6, 0.1e9)};
  std::vector<AddressEntry> remote = {peer_of(local[0]), peer_of(local[1])};
  LaneSelection s = select_lanes(local, remote, same_fabric(local, remote), {});
  EXPECT_EQ(s.rma_bw_lanes.size(), 1u);
}

TEST(UcpLanes, EagerRails) {
  std::vector<LocalResource> local = {nic("nic0", 1e-6, 12.5e9), nic("nic1", 1e-6, 12.5e9)};
  std::vector<AddressEntry> remote = {peer_of(local[0]), peer_of(local[1])};
  LaneSelectParams p;
  p.max_eager_rails = 2;
  LaneSelection s = select_lanes(local, remote, same_fabric(local, remote), p);
  ASSERT_EQ(s.am_bw_lanes.size(), 2u);
  EXPECT_EQ(static_cast<int>(s.am_bw_lanes[0]), s.am_lane);
}

// GPU memory that no RMA lane can touch gets a lane of its own: cuda_ipc
// (GPU memory only, put and get by zero-copy) beside tcp, ahead of staging;
// none when a chosen RMA lane touches GPU memory already.
TEST(UcpLanes, GpuMemoryGetsTheCudaIpcLaneWhenNoRmaLaneTouchesIt) {
  LocalResource tcp = nic("eth0", 10e-6, 3e9, "tcp");
  LocalResource ipc = nic("cuda", 5e-6, 300e9, "cuda_ipc");
  ipc.attr.cap = uct::kCapPutZcopy | uct::kCapGetZcopy | uct::kCapConnectToIface;
  ipc.attr.access_mem_types = uct::mem_type_bit(uct::MemType::Cuda);
  std::vector<LocalResource> local = {tcp, ipc};
  std::vector<AddressEntry> remote = {peer_of(tcp), peer_of(ipc)};
  auto all = [](size_t, size_t, std::string*) { return true; };
  LaneSelection s = select_lanes(local, remote, all, {});
  ASSERT_EQ(s.gpu_lanes.size(), 1u);
  EXPECT_EQ(local[s.lanes[s.gpu_lanes[0]].local].tl_name, "cuda_ipc");
  EXPECT_EQ(s.lanes[s.gpu_lanes[0]].roles, unsigned{kLaneRmaGpu});
  for (size_t lane : s.rma_lanes) EXPECT_EQ(local[s.lanes[lane].local].tl_name, "tcp");
  std::ostringstream os;
  s.print(os);
  EXPECT_NE(os.str().find("cuda_ipc/cuda -> cuda_ipc/cuda [rma-gpu]"), std::string::npos) << os.str();

  // Unreachable (another host): no GPU lane, the transport's reason kept.
  auto not_ipc = [&](size_t li, size_t, std::string* why) {
    if (local[li].tl_name != "cuda_ipc") return true;
    *why = "another host (boot ids differ)";
    return false;
  };
  s = select_lanes(local, remote, not_ipc, {});
  EXPECT_TRUE(s.gpu_lanes.empty());
  os.str("");
  s.print(os);
  EXPECT_NE(os.str().find("unreachable: another host (boot ids differ)"), std::string::npos)
      << os.str();

  // An RMA lane that touches GPU memory (GPUDirect RDMA) leaves no GPU lane.
  local[0].attr.access_mem_types |= uct::mem_type_bit(uct::MemType::Cuda);
  s = select_lanes(local, remote, all, {});
  EXPECT_TRUE(s.gpu_lanes.empty());
}

}  // namespace
}  // namespace mc::ucp::test
