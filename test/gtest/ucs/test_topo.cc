// SPDX-License-Identifier: Apache-2.0
// Topology discovery against the sysfs fixture in ucs/topo_fixture (see its
// README.md), altered copies of it, and this machine's /sys.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "ucs/topo/topo.h"

namespace mc::ucs {
namespace {

namespace fs = std::filesystem;

const std::string kFixture = MC_TEST_SRCDIR "/ucs/topo_fixture";

std::vector<std::string> names_of(const std::vector<TopoDevice>& devices) {
  std::vector<std::string> names;
  for (const TopoDevice& dev : devices) names.push_back(dev.name);
  return names;
}

// Binds `const Topology& var` to a discovery that must succeed.
#define ASSERT_DISCOVER(var, ...)                                         \
  Result<Topology> var##_result = Topology::discover(__VA_ARGS__);        \
  ASSERT_TRUE(var##_result.ok()) << status_string(var##_result.status()); \
  const Topology& var = *var##_result

// The device of that name; a failure and an empty device when there is none.
const TopoDevice& device(const Topology& topo, const std::string& name) {
  static const TopoDevice kNone;
  const TopoDevice* dev = topo.find(name);
  if (!dev) ADD_FAILURE() << "no device " << name;
  return dev ? *dev : kNone;
}

// A private copy of the fixture to damage; symlinks stay relative, so the
// copy is a valid tree of its own. Removed at the end of the test.
class TopoFixtureCopy : public testing::Test {
 protected:
  void SetUp() override {
    std::string templ = testing::TempDir() + "mc_topo_XXXXXX";
    ASSERT_NE(mkdtemp(templ.data()), nullptr);
    root_ = templ + "/sys";
    std::error_code ec;
    fs::copy(kFixture, root_, fs::copy_options::recursive | fs::copy_options::copy_symlinks, ec);
    ASSERT_FALSE(ec) << ec.message();
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(fs::path(root_).parent_path(), ec);
  }
  void write(const std::string& rel, const std::string& text) {
    std::ofstream(fs::path(root_) / rel) << text;
  }
  void remove(const std::string& rel) {
    std::error_code ec;
    ASSERT_TRUE(fs::remove_all(fs::path(root_) / rel, ec) > 0) << rel << " " << ec.message();
  }
  std::string pci(const std::string& addr) { return "bus/pci/devices/" + addr; }

  std::string root_;
};

TEST(TopoCpuList, ParsesRangesAndSingles) {
  EXPECT_EQ(*parse_cpu_list("0-3,8-11"), (std::vector<int>{0, 1, 2, 3, 8, 9, 10, 11}));
  EXPECT_EQ(*parse_cpu_list("5"), std::vector<int>{5});
  EXPECT_EQ(*parse_cpu_list("0-3\n"), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(*parse_cpu_list(" 0 , 2-3 "), (std::vector<int>{0, 2, 3}));
  EXPECT_EQ(*parse_cpu_list("7-7"), std::vector<int>{7});
  EXPECT_EQ(*parse_cpu_list("3,1,1-2"), (std::vector<int>{1, 2, 3}));
  EXPECT_TRUE(parse_cpu_list("")->empty());
  EXPECT_TRUE(parse_cpu_list("\n")->empty());  // a memory-only node
}

TEST(TopoCpuList, RejectsMalformed) {
  for (const char* bad : {"3-1", "1-", "-1", "a", ",", "0,,1", "1-2-3", "0-3:2", "1 2", "0x1",
                          "0-70000", "99999999999", "+1"}) {
    EXPECT_EQ(parse_cpu_list(bad).status(), Status::InvalidParam) << "'" << bad << "'";
  }
}

TEST(TopoCpuList, FormatsRanges) {
  EXPECT_EQ(format_cpu_list({0, 1, 2, 3, 8, 9, 10, 11}), "0-3,8-11");
  EXPECT_EQ(format_cpu_list({1, 3}), "1,3");
  EXPECT_EQ(format_cpu_list({5}), "5");
  EXPECT_EQ(format_cpu_list({}), "");
  EXPECT_EQ(*parse_cpu_list(format_cpu_list({0, 2, 3, 4, 9})), (std::vector<int>{0, 2, 3, 4, 9}));
}

TEST(Topo, MissingRootIsInvalidParam) {
  EXPECT_EQ(Topology::discover("/nonexistent/mc-topo-root").status(), Status::InvalidParam);
  EXPECT_EQ(Topology::discover(kFixture + "/README.md").status(), Status::InvalidParam);
  EXPECT_EQ(Topology::discover("").status(), Status::InvalidParam);
}

TEST(Topo, FixtureNumaNodes) {
  ASSERT_DISCOVER(topo, kFixture);
  EXPECT_EQ(topo.sysfs_root(), kFixture);
  ASSERT_EQ(topo.numa_nodes().size(), 2u);
  EXPECT_EQ(topo.numa_nodes()[0].id, 0);
  EXPECT_EQ(topo.numa_nodes()[0].cpus, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(topo.numa_nodes()[1].id, 1);
  EXPECT_EQ(topo.numa_nodes()[1].cpus, (std::vector<int>{4, 5, 6, 7}));
  EXPECT_EQ(topo.numa_node_of_cpu(0), 0);
  EXPECT_EQ(topo.numa_node_of_cpu(3), 0);
  EXPECT_EQ(topo.numa_node_of_cpu(4), 1);
  EXPECT_EQ(topo.numa_node_of_cpu(7), 1);
  EXPECT_EQ(topo.numa_node_of_cpu(8), -1);
  EXPECT_EQ(topo.numa_node_of_cpu(-1), -1);
}

TEST(Topo, FixtureRdmaDevices) {
  ASSERT_DISCOVER(topo, kFixture);
  ASSERT_EQ(names_of(topo.rdma_devices()), (std::vector<std::string>{"mlx5_0", "mlx5_1"}));
  const TopoDevice& m0 = topo.rdma_devices()[0];
  EXPECT_EQ(m0.kind, DeviceKind::Rdma);
  EXPECT_EQ(m0.pci_addr, "0000:04:00.0");
  EXPECT_EQ(m0.numa_node, 0);
  EXPECT_EQ(m0.netdev, "eth0");
  EXPECT_FALSE(m0.is_virtual);
  EXPECT_EQ(m0.sysfs_path,
            "devices/pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:01.0/0000:04:00.0");
  const TopoDevice& m1 = topo.rdma_devices()[1];
  EXPECT_EQ(m1.pci_addr, "0000:84:00.0");
  EXPECT_EQ(m1.numa_node, 1);
  EXPECT_EQ(m1.netdev, "eth1");
}

TEST(Topo, FixtureNetDevices) {
  ASSERT_DISCOVER(topo, kFixture);
  // lo is skipped, and so is the file bonding_masters.
  ASSERT_EQ(names_of(topo.net_devices()),
            (std::vector<std::string>{"eth0", "eth1", "eth2", "eth3", "veth0"}));
  const TopoDevice& eth0 = device(topo, "eth0");
  EXPECT_EQ(eth0.kind, DeviceKind::Net);
  EXPECT_EQ(eth0.pci_addr, "0000:04:00.0");
  EXPECT_EQ(eth0.numa_node, 0);
  EXPECT_TRUE(eth0.netdev.empty());
  EXPECT_EQ(device(topo, "eth1").numa_node, 1);
  EXPECT_EQ(device(topo, "eth3").pci_addr, "0000:41:00.0");
  EXPECT_EQ(device(topo, "eth3").numa_node, 0);
  const TopoDevice& veth = device(topo, "veth0");
  EXPECT_TRUE(veth.is_virtual);
  EXPECT_TRUE(veth.pci_addr.empty());
  EXPECT_TRUE(veth.sysfs_path.empty());
  EXPECT_EQ(veth.numa_node, -1);
  EXPECT_EQ(topo.find("lo"), nullptr);
  EXPECT_EQ(topo.find("nope"), nullptr);
  // RDMA devices exist, so they are the NICs that the matrix ranks.
  EXPECT_EQ(names_of(topo.nics()), (std::vector<std::string>{"mlx5_0", "mlx5_1"}));
}

TEST(Topo, FixtureGpus) {
  ASSERT_DISCOVER(topo, kFixture);
  // The non-NVIDIA VGA (0000:42:00.0) and the NVIDIA bridge (0000:85:00.0) are not GPUs.
  ASSERT_EQ(names_of(topo.gpus()), (std::vector<std::string>{"cuda:0", "cuda:1"}));
  EXPECT_EQ(topo.gpus()[0].kind, DeviceKind::Gpu);
  EXPECT_EQ(topo.gpus()[0].pci_addr, "0000:03:00.0");
  EXPECT_EQ(topo.gpus()[0].numa_node, 0);
  EXPECT_EQ(topo.gpus()[0].sysfs_path,
            "devices/pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:00.0/0000:03:00.0");
  EXPECT_EQ(topo.gpus()[1].pci_addr, "0000:83:00.0");
  EXPECT_EQ(topo.gpus()[1].numa_node, 1);
  EXPECT_EQ(&device(topo, "cuda:1"), &topo.gpus()[1]);
}

TEST(Topo, FixtureDistanceEveryCategory) {
  ASSERT_DISCOVER(topo, kFixture);
  auto d = [&](const char* a, const char* b) {
    const PciDistance ab = Topology::distance(device(topo, a), device(topo, b));
    EXPECT_EQ(ab, Topology::distance(device(topo, b), device(topo, a))) << a << " " << b;
    return ab;
  };
  EXPECT_EQ(d("mlx5_0", "eth0"), PciDistance::SameDevice);
  EXPECT_EQ(d("cuda:0", "cuda:0"), PciDistance::SameDevice);
  EXPECT_EQ(d("cuda:0", "mlx5_0"), PciDistance::SamePcieSwitch);
  EXPECT_EQ(d("cuda:1", "mlx5_1"), PciDistance::SamePcieSwitch);
  EXPECT_EQ(d("cuda:1", "eth1"), PciDistance::SamePcieSwitch);
  EXPECT_EQ(d("cuda:0", "eth2"), PciDistance::SameRootComplex);
  EXPECT_EQ(d("mlx5_0", "eth2"), PciDistance::SameRootComplex);
  EXPECT_EQ(d("cuda:0", "eth3"), PciDistance::SameNuma);
  EXPECT_EQ(d("cuda:0", "mlx5_1"), PciDistance::CrossSocket);
  EXPECT_EQ(d("cuda:1", "mlx5_0"), PciDistance::CrossSocket);
  EXPECT_EQ(d("cuda:1", "eth3"), PciDistance::CrossSocket);
  EXPECT_EQ(d("veth0", "cuda:0"), PciDistance::Unknown);
  EXPECT_EQ(d("veth0", "veth0"), PciDistance::Unknown);
}

TEST(Topo, DistanceOfHandMadePaths) {
  auto dev = [](std::string path, int numa) {
    TopoDevice d;
    d.sysfs_path = std::move(path);
    d.numa_node = numa;
    return d;
  };
  const std::string port = "devices/pci0000:00/0000:00:01.0/";
  // Two functions of one device.
  EXPECT_EQ(Topology::distance(dev(port + "0000:05:00.0", 0), dev(port + "0000:05:00.1", 0)),
            PciDistance::SameDevice);
  // A virtio child stops the PCI chain at its function.
  EXPECT_EQ(Topology::distance(dev("devices/pci0000:00/0000:00:03.0/virtio2", -1),
                               dev("devices/pci0000:00/0000:00:03.0", -1)),
            PciDistance::SameDevice);
  EXPECT_EQ(Topology::distance(dev("devices/pci0000:00/0000:00:03.0/virtio2", -1),
                               dev("devices/pci0000:00/0000:00:04.0", -1)),
            PciDistance::SameRootComplex);
  // Intel VMD domains have five hex digits.
  EXPECT_EQ(Topology::distance(dev("devices/pci10000:00/10000:00:01.0/10000:01:00.0", 0),
                               dev("devices/pci10000:00/10000:00:01.0/10000:01:00.1", 0)),
            PciDistance::SameDevice);
  EXPECT_EQ(Topology::distance(dev("devices/pci0000:00/0000:00:01.0", -1),
                               dev("devices/pci0000:80/0000:80:01.0", -1)),
            PciDistance::Unknown);
  EXPECT_EQ(Topology::distance(dev("", 1), dev("", 1)), PciDistance::SameNuma);
  EXPECT_EQ(Topology::distance(dev("", 0), dev("", 1)), PciDistance::CrossSocket);
  EXPECT_EQ(Topology::distance(dev("devices/platform/foo", 0), dev("", -1)), PciDistance::Unknown);
}

TEST(Topo, DistanceNames) {
  EXPECT_STREQ(pci_distance_name(PciDistance::SameDevice), "same-device");
  EXPECT_STREQ(pci_distance_name(PciDistance::SamePcieSwitch), "same-pcie-switch");
  EXPECT_STREQ(pci_distance_name(PciDistance::SameRootComplex), "same-root-complex");
  EXPECT_STREQ(pci_distance_name(PciDistance::SameNuma), "same-numa");
  EXPECT_STREQ(pci_distance_name(PciDistance::CrossSocket), "cross-socket");
  EXPECT_STREQ(pci_distance_name(PciDistance::Unknown), "unknown");
  EXPECT_STREQ(device_kind_name(DeviceKind::Rdma), "rdma");
  EXPECT_STREQ(device_kind_name(DeviceKind::Net), "net");
  EXPECT_STREQ(device_kind_name(DeviceKind::Gpu), "gpu");
}

TEST(Topo, FixturePriorityMatrix) {
  ASSERT_DISCOVER(topo, kFixture);
  const PriorityMatrix m = topo.priority_matrix();
  const PriorityMatrix expected = {
      {"cpu:0", {{"mlx5_0"}, {"mlx5_1"}}},
      {"cpu:1", {{"mlx5_1"}, {"mlx5_0"}}},
      {"cuda:0", {{"mlx5_0"}, {"mlx5_1"}}},
      {"cuda:1", {{"mlx5_1"}, {"mlx5_0"}}},
  };
  EXPECT_EQ(m, expected);
}

TEST(Topo, FixturePriorityMatrixJson) {
  ASSERT_DISCOVER(topo, kFixture);
  EXPECT_EQ(topo.priority_matrix_json(),
            R"({"cpu:0": [["mlx5_0"], ["mlx5_1"]], "cpu:1": [["mlx5_1"], ["mlx5_0"]], )"
            R"("cuda:0": [["mlx5_0"], ["mlx5_1"]], "cuda:1": [["mlx5_1"], ["mlx5_0"]]})");
}

TEST(Topo, JsonEscapes) {
  EXPECT_EQ(priority_matrix_to_json({}), "{}");
  EXPECT_EQ(priority_matrix_to_json({{"cpu:0", {}}}), R"({"cpu:0": [[], []]})");
  const PriorityMatrix odd = {{"cpu:0", {{"a\"b", "c\\d"}, {"e\nf", std::string("\x01", 1)}}}};
  EXPECT_EQ(priority_matrix_to_json(odd), R"({"cpu:0": [["a\"b", "c\\d"], ["e\nf", "\u0001"]]})");
}

TEST(Topo, FixturePrint) {
  std::ostringstream os;
  ASSERT_DISCOVER(topo, kFixture);
  topo.print(os);
  const std::string text = os.str();
  for (const char* want :
       {"numa node 0: cpus 0-3", "numa node 1: cpus 4-7", "mlx5_0", "netdev eth0", "cuda:1",
        "0000:83:00.0", "virtual", "mlx5_0 same-pcie-switch", "mlx5_1 cross-socket"}) {
    EXPECT_NE(text.find(want), std::string::npos) << want << " in\n" << text;
  }
}

TEST_F(TopoFixtureCopy, NetdevsWhenNoRdma) {
  remove("class/infiniband");
  ASSERT_DISCOVER(topo, root_);
  EXPECT_TRUE(topo.rdma_devices().empty());
  // veth0 is not on PCI, so it is not ranked.
  EXPECT_EQ(names_of(topo.nics()), (std::vector<std::string>{"eth0", "eth1", "eth2", "eth3"}));
  const PriorityMatrix m = topo.priority_matrix();
  EXPECT_EQ(m.at("cpu:0"), (PriorityEntry{{"eth0", "eth2", "eth3"}, {"eth1"}}));
  EXPECT_EQ(m.at("cpu:1"), (PriorityEntry{{"eth1"}, {"eth0", "eth2", "eth3"}}));
  EXPECT_EQ(m.at("cuda:0"), (PriorityEntry{{"eth0"}, {"eth1", "eth2", "eth3"}}));
  EXPECT_EQ(m.at("cuda:1"), (PriorityEntry{{"eth1"}, {"eth0", "eth2", "eth3"}}));
}

TEST_F(TopoFixtureCopy, UnreadableFilesDegrade) {
  // -1 (firmware without proximity data), or no numa_node at all: the local
  // CPUs (4-7) still say node 1.
  write(pci("0000:84:00.0") + "/numa_node", "-1\n");
  remove(pci("0000:83:00.0") + "/numa_node");
  // Neither: unknown.
  remove(pci("0000:04:00.0") + "/numa_node");
  remove(pci("0000:04:00.0") + "/local_cpulist");
  // -1 with CPUs of both nodes: unknown.
  write(pci("0000:41:00.0") + "/numa_node", "-1\n");
  write(pci("0000:41:00.0") + "/local_cpulist", "0-7\n");
  write(pci("0000:05:00.0") + "/numa_node", "garbage\n");
  // A VGA-class NVIDIA device is a GPU too.
  write(pci("0000:83:00.0") + "/class", "0x030000\n");
  remove(pci("0000:84:00.0") + "/infiniband/mlx5_1/device");

  ASSERT_DISCOVER(topo, root_);
  EXPECT_EQ(device(topo, "eth1").numa_node, 1);
  EXPECT_EQ(device(topo, "mlx5_0").numa_node, -1);
  EXPECT_EQ(device(topo, "eth0").numa_node, -1);
  EXPECT_EQ(device(topo, "eth3").numa_node, -1);
  EXPECT_EQ(device(topo, "eth2").numa_node, 0);  // garbage, but its CPUs are node 0's
  ASSERT_EQ(names_of(topo.gpus()), (std::vector<std::string>{"cuda:0", "cuda:1"}));
  EXPECT_EQ(topo.gpus()[1].numa_node, 1);
  const TopoDevice& m1 = device(topo, "mlx5_1");
  EXPECT_TRUE(m1.is_virtual);
  EXPECT_TRUE(m1.netdev.empty());
  // mlx5_0's node is unknown, but its PCIe path still pairs it with GPU0.
  const PriorityMatrix m = topo.priority_matrix();
  EXPECT_EQ(m.at("cpu:0"), (PriorityEntry{{}, {"mlx5_0", "mlx5_1"}}));
  EXPECT_EQ(m.at("cuda:0"), (PriorityEntry{{"mlx5_0"}, {"mlx5_1"}}));
}

TEST_F(TopoFixtureCopy, BadCpuListLeavesNodeEmpty) {
  write("devices/system/node/node1/cpulist", "4-x\n");
  remove("devices/system/node/node0/cpulist");
  ASSERT_DISCOVER(topo, root_);
  ASSERT_EQ(topo.numa_nodes().size(), 2u);
  EXPECT_TRUE(topo.numa_nodes()[0].cpus.empty());
  EXPECT_TRUE(topo.numa_nodes()[1].cpus.empty());
  EXPECT_EQ(topo.numa_node_of_cpu(4), -1);
  EXPECT_EQ(device(topo, "mlx5_1").numa_node, 1);  // numa_node itself is fine
}

TEST_F(TopoFixtureCopy, WithoutNodeDirsOneNodeHoldsAllCpus) {
  remove("devices/system/node");
  ASSERT_DISCOVER(topo, root_);
  ASSERT_EQ(topo.numa_nodes().size(), 1u);
  EXPECT_EQ(topo.numa_nodes()[0].id, 0);
  EXPECT_EQ(topo.numa_nodes()[0].cpus, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
}

TEST_F(TopoFixtureCopy, EmptyTreeStillDiscovers) {
  for (const char* dir : {"class", "bus", "devices"}) remove(dir);
  ASSERT_DISCOVER(topo, root_);
  ASSERT_EQ(topo.numa_nodes().size(), 1u);
  EXPECT_TRUE(topo.numa_nodes()[0].cpus.empty());
  EXPECT_TRUE(topo.nics().empty());
  EXPECT_TRUE(topo.gpus().empty());
  EXPECT_EQ(topo.priority_matrix_json(), R"({"cpu:0": [[], []]})");
}

TEST(TopoOverride, ParsesValid) {
  std::string error;
  Result<PriorityMatrix> m = parse_priority_matrix("cpu:0=mlx5_1|mlx5_0;cuda:0=mlx5_1", &error);
  ASSERT_TRUE(m.ok()) << error;
  EXPECT_EQ(*m,
            (PriorityMatrix{{"cpu:0", {{"mlx5_1"}, {"mlx5_0"}}}, {"cuda:0", {{"mlx5_1"}, {}}}}));
  EXPECT_EQ(format_priority_matrix(*m), "cpu:0=mlx5_1|mlx5_0;cuda:0=mlx5_1");

  m = parse_priority_matrix(" cpu:1 = a , b | c ; cuda:12=|d;");
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(*m, (PriorityMatrix{{"cpu:1", {{"a", "b"}, {"c"}}}, {"cuda:12", {{}, {"d"}}}}));
  EXPECT_EQ(*parse_priority_matrix(format_priority_matrix(*m)), *m);
  EXPECT_TRUE(parse_priority_matrix("")->empty());
}

TEST(TopoOverride, RejectsInvalid) {
  const std::pair<const char*, const char*> cases[] = {
      {"cpu0=a", "not a location"},
      {"gpu:0=a", "not a location"},
      {"cpu:=a", "not a location"},
      {"cpu:01=a", "not a location"},
      {"cpu:-1=a", "not a location"},
      {"cpu:0", "has no '='"},
      {"cpu:0=", "no NIC"},
      {"cpu:0=|", "no NIC"},
      {"cpu:0=a,,b", "not a NIC name"},
      {"cpu:0=a|b|c", "not a NIC name"},
      {"cpu:0=a b", "not a NIC name"},
      {"cpu:0=a=b", "not a NIC name"},
      {"cpu:0=a|a", "listed twice"},
      {"cpu:0=a;cpu:0=b", "given twice"},
  };
  for (const auto& [text, why] : cases) {
    std::string error;
    EXPECT_EQ(parse_priority_matrix(text, &error).status(), Status::InvalidParam) << text;
    EXPECT_NE(error.find(why), std::string::npos) << text << ": " << error;
  }
}

TEST(TopoOverride, ReplacesAndAddsEntries) {
  ASSERT_DISCOVER(topo, kFixture, *parse_priority_matrix("cuda:0=mlx5_1|mlx5_0;cuda:7=eth2"));
  const PriorityMatrix m = topo.priority_matrix();
  EXPECT_EQ(m.size(), 5u);
  EXPECT_EQ(m.at("cuda:0"), (PriorityEntry{{"mlx5_1"}, {"mlx5_0"}}));
  EXPECT_EQ(m.at("cuda:7"), (PriorityEntry{{"eth2"}, {}}));
  EXPECT_EQ(m.at("cpu:0"), (PriorityEntry{{"mlx5_0"}, {"mlx5_1"}}));  // discovered
  EXPECT_NE(topo.priority_matrix_json().find(R"("cuda:0": [["mlx5_1"], ["mlx5_0"]])"),
            std::string::npos);
}

TEST(TopoOverride, UnknownNicIsInvalidParam) {
  EXPECT_EQ(Topology::discover(kFixture, {{"cpu:0", {{"mlx5_9"}, {}}}}).status(),
            Status::InvalidParam);
  EXPECT_EQ(Topology::discover(kFixture, {{"cpu:0", {{"mlx5_0"}, {"cuda:0"}}}}).status(),
            Status::InvalidParam);  // a GPU is not a NIC
  EXPECT_EQ(Topology::discover(kFixture, {{"cpu:0", {{"lo"}, {}}}}).status(), Status::InvalidParam);
}

TEST(TopoConfig, DefaultsAndListing) {
  Result<TopoConfig> cfg = config::read_table<TopoConfig>(topo_config_table(), config::Sources());
  ASSERT_TRUE(cfg.ok());
  EXPECT_EQ(cfg->sysfs_root, "/sys");
  EXPECT_TRUE(cfg->priority_matrix.empty());
  std::ostringstream os;
  topo_config_table().print(os, &*cfg, true);
  EXPECT_NE(os.str().find("MC_TOPO_SYSFS_ROOT=/sys"), std::string::npos) << os.str();
  EXPECT_NE(os.str().find("MC_TOPO_PRIORITY_MATRIX="), std::string::npos) << os.str();
}

TEST(TopoConfig, DiscoversFromSources) {
  Result<config::Sources> sources = config::Sources::from(
      {{"MC_TOPO_SYSFS_ROOT", kFixture}, {"MC_TOPO_PRIORITY_MATRIX", "cpu:0=mlx5_1"}}, {});
  ASSERT_TRUE(sources.ok());
  Result<Topology> topo = Topology::discover(*sources);
  ASSERT_TRUE(topo.ok());
  EXPECT_EQ(topo->sysfs_root(), kFixture);
  EXPECT_EQ(topo->gpus().size(), 2u);
  EXPECT_EQ(topo->priority_matrix().at("cpu:0"), (PriorityEntry{{"mlx5_1"}, {}}));
  EXPECT_EQ(topo->priority_matrix().at("cpu:1"), (PriorityEntry{{"mlx5_1"}, {"mlx5_0"}}));

  // The same from a config file.
  sources = config::Sources::from({}, {{"test.conf", "MC_TOPO_SYSFS_ROOT=" + kFixture + "\n"}});
  ASSERT_TRUE(sources.ok());
  topo = Topology::discover(*sources);
  ASSERT_TRUE(topo.ok());
  EXPECT_EQ(names_of(topo->rdma_devices()), (std::vector<std::string>{"mlx5_0", "mlx5_1"}));
}

TEST(TopoConfig, BadValuesAreInvalidParam) {
  std::string error;
  Result<TopoConfig> cfg = config::read_table<TopoConfig>(
      topo_config_table(), *config::Sources::from({{"MC_TOPO_PRIORITY_MATRIX", "cpu:0="}}, {}),
      &error);
  EXPECT_EQ(cfg.status(), Status::InvalidParam);
  EXPECT_NE(error.find("MC_TOPO_PRIORITY_MATRIX"), std::string::npos) << error;

  EXPECT_EQ(Topology::discover(*config::Sources::from({{"MC_TOPO_SYSFS_ROOT", kFixture},
                                                       {"MC_TOPO_PRIORITY_MATRIX", "gpu:0=mlx5_0"}},
                                                      {}))
                .status(),
            Status::InvalidParam);
  EXPECT_EQ(Topology::discover(
                *config::Sources::from({{"MC_TOPO_SYSFS_ROOT", "/nonexistent/mc-topo-root"}}, {}))
                .status(),
            Status::InvalidParam);
  EXPECT_EQ(Topology::discover(*config::Sources::from({{"MC_TOPO_SYSFS_ROOT", kFixture},
                                                       {"MC_TOPO_PRIORITY_MATRIX", "cpu:0=mlx5_7"}},
                                                      {}))
                .status(),
            Status::InvalidParam);
}

TEST(TopoReal, DiscoveringSysDoesNotFail) {
  Result<Topology> topo = Topology::discover("/sys");
  ASSERT_TRUE(topo.ok());
  EXPECT_FALSE(topo->numa_nodes().empty());
  for (size_t i = 0; i < topo->gpus().size(); ++i) {
    EXPECT_EQ(topo->gpus()[i].name, "cuda:" + std::to_string(i));
  }
  const std::string json = topo->priority_matrix_json();
  EXPECT_EQ(json.front(), '{');
  EXPECT_EQ(json.back(), '}');
  std::ostringstream os;
  topo->print(os);
  EXPECT_FALSE(os.str().empty());
}

}  // namespace
}  // namespace mc::ucs
