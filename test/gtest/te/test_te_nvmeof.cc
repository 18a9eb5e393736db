// SPDX-License-Identifier: Apache-2.0
// File (nvmeof) segments through the Transfer Engine: real files in a
// temporary directory, registered with mc_nvmeof_register through each
// metadata backend and mounted for this host at other names (symlinks) so
// the local_path_map is used; a second process (this binary again, running
// TeNvmeofChild.Initiator) WRITEs and READs at aligned and unaligned
// offsets across the boundary of the two files, and this process checks the
// files with plain read(). Errors in this process: out of range (INVALID), a
// truncated file (FAILED, INVALID once reopened), a read-only file (WRITE
// INVALID, READ works), a file not mounted for this host (openSegment
// fails); the tool's errors.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <memory>

#include "common/services.h"
#include "te/te_test_util.h"
#include "ucp/metadata/descriptors.h"
#include "uct/base/component_loader.h"
#include "uct/nvmeof/nvmeof_test_util.h"

namespace mc::te::test {
namespace {

using mc::test::Service;
using mc::test::Services;
namespace nt = mc::uct::nvmeof::test;

// Two files: the first of an unaligned length, so the boundary is unaligned.
constexpr size_t kLen0 = 40960 + 100;
constexpr size_t kLen1 = 65536;
constexpr uint64_t kSeed0 = 5, kSeed1 = 6;

// The transfers of the second process: offset in the segment, length, seed.
struct Op {
  uint64_t offset;
  size_t length;
  uint64_t seed;
};
const Op kOps[] = {
    {4096, 8192, 21},                // aligned, inside file 0
    {kLen0 - 1000, 3000, 22},        // unaligned, across the boundary
    {kLen0 + 4096, 4096 * 3, 23},    // aligned in file 1 (unaligned in the segment)
    {123, kLen0 + kLen1 - 200, 24},  // nearly everything, overwriting the others
};

std::string tool_path() {
  return std::string(MC_TOP_BUILDDIR) + "/src/tools/metadata/mc_nvmeof_register";
}

std::string self_path() {
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
}

const std::map<std::string, std::string> kEnv =
    loopback_env("tcp", {{"MC_METADATA_TIMEOUT", "3s"}, {"MC_LOG_LEVEL", "warn"}});

// Runs mc_nvmeof_register; its exit status, output in *out.
int tool(const std::vector<std::string>& args, std::string* out) {
  std::vector<std::string> argv = {tool_path()};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_process(argv, kEnv, 60, out);
}

class TeNvmeof : public testing::Test {
 protected:
  void SetUp() override {
    if (uct::find_component("nvmeof") == nullptr) GTEST_SKIP() << "nvmeof not built (liburing)";
    ASSERT_TRUE(dir_.ok());
    f0_ = dir_.file("disk0");
    f1_ = dir_.file("disk1");
    ASSERT_TRUE(nt::write_pattern_file(f0_, kLen0, kSeed0));
    ASSERT_TRUE(nt::write_pattern_file(f1_, kLen1, kSeed1));
    // This host's names for them: the map must be used to find them.
    ASSERT_EQ(::symlink(f0_.c_str(), dir_.file("mnt0").c_str()), 0);
    ASSERT_EQ(::symlink(f1_.c_str(), dir_.file("mnt1").c_str()), 0);
  }

  // Registers `segment` of `files` on server "storage-node" and mounts
  // each for 127.0.0.1 at `mounts` (none when empty).
  void register_segment(const std::string& url, const std::string& segment,
                        const std::vector<std::string>& files,
                        const std::vector<std::string>& mounts,
                        const std::string& server = "storage-node") {
    std::string out;
    std::vector<std::string> args = {"register", "--metadata", url,   "--segment",
                                     segment,    "--server",   server};
    args.insert(args.end(), files.begin(), files.end());
    ASSERT_EQ(tool(args, &out), 0) << out;
    for (size_t i = 0; i < mounts.size(); ++i) {
      ASSERT_EQ(tool({"mount", "--metadata", url, "--segment", segment, "--host", "127.0.0.1",
                      "--buffer", std::to_string(i), "--path", mounts[i]},
                     &out),
                0)
          << out;
    }
  }

  std::unique_ptr<TransferEngine> make_engine(const std::string& url) {
    ScopedEnv scoped(kEnv);
    auto engine = std::make_unique<TransferEngine>();
    EXPECT_EQ(engine->init(url, free_segment_name()), 0);
    return engine;
  }

  nt::TempDir dir_;
  std::string f0_, f1_;
};

// What the files hold after kOps, from the patterns they were made with.
std::vector<uint8_t> expected_segment() {
  std::vector<uint8_t> want = nt::pattern_bytes(kSeed0, 0, kLen0);
  const std::vector<uint8_t> f1 = nt::pattern_bytes(kSeed1, 0, kLen1);
  want.insert(want.end(), f1.begin(), f1.end());
  for (const Op& op : kOps) {
    const std::vector<uint8_t> v = nt::pattern_bytes(op.seed, op.offset, op.length);
    std::copy(v.begin(), v.end(), want.begin() + static_cast<ptrdiff_t>(op.offset));
  }
  return want;
}

class TeNvmeofBackend : public TeNvmeof, public testing::WithParamInterface<Service> {};

TEST_P(TeNvmeofBackend, SecondProcessWritesAndReadsFilesThroughTheMap) {
  Services services;
  const std::string url = GetParam() == Service::Etcd    ? services.start_etcd()
                          : GetParam() == Service::Redis ? services.start_redis()
                                                         : services.start_metadata_server();
  ASSERT_FALSE(url.empty());
  register_segment(url, "nvme-seg", {f0_, f1_}, {dir_.file("mnt0"), dir_.file("mnt1")});
  std::map<std::string, std::string> env = kEnv;
  env["MC_TE_NVMEOF_CHILD_URL"] = url;
  env["MC_TE_NVMEOF_CHILD_SEGMENT"] = "nvme-seg";
  env["MC_TE_NVMEOF_CHILD_DIR"] = dir_.file("");
  std::string out;
  const int rc =
      run_process({self_path(), "--gtest_filter=TeNvmeofChild.Initiator"}, env, 120, &out);
  ASSERT_EQ(rc, 0) << out;
  ASSERT_NE(out.find("[  PASSED  ] 1 test"), std::string::npos) << out;
  // The files, read back with read(): every write landed, nothing grew.
  std::vector<uint8_t> got = nt::read_file(f0_);
  ASSERT_EQ(got.size(), kLen0);
  const std::vector<uint8_t> g1 = nt::read_file(f1_);
  ASSERT_EQ(g1.size(), kLen1);
  got.insert(got.end(), g1.begin(), g1.end());
  const std::vector<uint8_t> want = expected_segment();
  for (size_t i = 0; i < want.size(); ++i) ASSERT_EQ(got[i], want[i]) << "segment byte " << i;
}

INSTANTIATE_TEST_SUITE_P(All, TeNvmeofBackend,
                         testing::Values(Service::MetadataServer, Service::Etcd, Service::Redis),
                         [](const testing::TestParamInfo<Service>& info) {
                           return info.param == Service::Etcd    ? std::string("etcd")
                                  : info.param == Service::Redis ? std::string("redis")
                                                                 : std::string("http");
                         });

// The second process of SecondProcessWritesAndReadsFilesThroughTheMap
// (skipped when run on its own).
TEST(TeNvmeofChild, Initiator) {
  const char* url = getenv("MC_TE_NVMEOF_CHILD_URL");
  const char* segment = getenv("MC_TE_NVMEOF_CHILD_SEGMENT");
  const char* dir = getenv("MC_TE_NVMEOF_CHILD_DIR");
  if (!url || !segment || !dir) GTEST_SKIP() << "the second process of TeNvmeofBackend";
  TransferEngine engine;
  ASSERT_EQ(engine.init(url, free_segment_name()), 0);
  const SegmentHandle seg = engine.openSegment(segment);
  ASSERT_GE(seg, 0);
  std::vector<SegmentBufferInfo> bufs;
  ASSERT_EQ(engine.getSegmentBuffers(seg, bufs), 0);
  ASSERT_EQ(bufs.size(), 2u);
  EXPECT_EQ(bufs[0].location, "nvmeof");
  EXPECT_EQ(bufs[0].addr, 0u);
  EXPECT_EQ(bufs[0].length, kLen0);
  EXPECT_EQ(bufs[0].path, std::string(dir) + "mnt0") << "local_path_map was not used";
  EXPECT_EQ(bufs[1].addr, kLen0);
  EXPECT_EQ(bufs[1].path, std::string(dir) + "mnt1");
  nt::AlignedBuffer local(kLen0 + kLen1);
  ASSERT_NE(local.data, nullptr);
  ASSERT_EQ(engine.registerLocalMemory(local.data, local.size, "cpu:0"), 0);
  for (const Op& op : kOps) {
    const std::vector<uint8_t> v = nt::pattern_bytes(op.seed, op.offset, op.length);
    std::copy(v.begin(), v.end(), local.data);
    auto r = run_batch(engine, {{TransferRequest::WRITE, local.data, seg, op.offset, op.length}});
    ASSERT_EQ(r.size(), 1u);
    ASSERT_EQ(r[0].s, COMPLETED) << "write at " << op.offset;
    std::fill(local.data, local.data + op.length, 0);
    // Read from an unaligned local address too.
    uint8_t* dst = local.data + (op.offset % 2);
    r = run_batch(engine, {{TransferRequest::READ, dst, seg, op.offset, op.length - 1}});
    ASSERT_EQ(r.size(), 1u);
    ASSERT_EQ(r[0].s, COMPLETED) << "read at " << op.offset;
    ASSERT_EQ(r[0].transferred, op.length - 1);
    for (size_t i = 0; i + 1 < op.length; ++i) ASSERT_EQ(dst[i], v[i]) << op.offset << "+" << i;
  }
  std::vector<SegmentPathInfo> paths;
  ASSERT_EQ(engine.getSegmentPaths(seg, paths, nullptr, kLen0), 0);
  ASSERT_EQ(paths.size(), 1u);
  EXPECT_EQ(paths[0].local_device, "nvmeof/file");
  EXPECT_EQ(paths[0].remote_device, std::string(dir) + "mnt1");
  EXPECT_GT(paths[0].bytes, 0u);
  // Past the end: INVALID, nothing moves.
  auto r = run_batch(engine, {{TransferRequest::WRITE, local.data, seg, kLen0 + kLen1 - 10, 20}});
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].s, INVALID);
  EXPECT_EQ(engine.closeSegment(seg), 0);
}

TEST_F(TeNvmeof, ErrorsAreClean) {
  Services services;
  const std::string url = services.start_metadata_server();
  ASSERT_FALSE(url.empty());
  // A file not mounted for this host, on another server: openSegment fails.
  register_segment(url, "unmapped", {f0_}, {});
  // The read-only file: chmod, and (as root, who writes anyway) immutable.
  const std::string ro = dir_.file("ro");
  ASSERT_TRUE(nt::write_pattern_file(ro, 8192, 9));
  ASSERT_EQ(::chmod(ro.c_str(), 0444), 0);
  struct Immutable {  // undone however the test ends, so the directory goes
    std::string path;
    bool set = false;
    ~Immutable() {
      std::string out;
      if (set) run_process({"/bin/sh", "-c", "chattr -i " + path}, {}, 10, &out);
    }
  } immutable{ro};
  if (::access(ro.c_str(), W_OK) == 0) {
    std::string out;
    immutable.set = run_process({"/bin/sh", "-c", "chattr +i " + ro}, {}, 10, &out) == 0;
  }
  const bool read_only = ::access(ro.c_str(), W_OK) != 0;
  register_segment(url, "ro", {ro}, {ro});
  register_segment(url, "trunc", {f1_}, {f1_});

  auto engine = make_engine(url);
  EXPECT_LT(engine->openSegment("unmapped"), 0);
  EXPECT_LT(engine->openSegment("no-such-segment"), 0);
  std::vector<uint8_t> local(kLen1);
  ASSERT_EQ(engine->registerLocalMemory(local.data(), local.size(), "cpu:0"), 0);

  if (read_only) {
    const SegmentHandle seg = engine->openSegment("ro");
    ASSERT_GE(seg, 0);
    auto r = run_batch(*engine, {{TransferRequest::WRITE, local.data(), seg, 0, 4096},
                                 {TransferRequest::READ, local.data(), seg, 100, 4000}});
    ASSERT_EQ(r.size(), 2u);
    EXPECT_EQ(r[0].s, INVALID) << "a WRITE to a read-only file";
    EXPECT_EQ(r[1].s, COMPLETED) << "a READ of it";
    const std::vector<uint8_t> want = nt::pattern_bytes(9, 100, 4000);
    EXPECT_TRUE(std::equal(want.begin(), want.end(), local.begin()));
    EXPECT_EQ(engine->closeSegment(seg), 0);
  } else {
    // Root on a file system without the immutable flag (tmpfs, overlayfs).
    std::cout << "[   NOTE   ] read-only case not run: root writes a 0444 file and chattr +i "
                 "failed on "
              << ro << "\n";
  }

  // Truncated under an open segment: the transport notices, the task FAILs,
  // the file does not grow.
  SegmentHandle seg = engine->openSegment("trunc");
  ASSERT_GE(seg, 0);
  ASSERT_EQ(::truncate(f1_.c_str(), 10000), 0);
  auto r = run_batch(*engine, {{TransferRequest::READ, local.data(), seg, 20000, 4096},
                               {TransferRequest::WRITE, local.data(), seg, 9000, 4096},
                               {TransferRequest::READ, local.data(), seg, 0, 8192}});
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].s, FAILED);
  EXPECT_EQ(r[1].s, FAILED);
  EXPECT_EQ(r[2].s, COMPLETED);
  EXPECT_EQ(nt::file_size(f1_), 10000u) << "nothing is written past the end";
  // The last file segment closed (the nvmeof transport with it), opened
  // again: past the file's length is INVALID at submit.
  EXPECT_EQ(engine->closeSegment(seg), 0);
  seg = engine->openSegment("trunc");
  ASSERT_GE(seg, 0);
  r = run_batch(*engine, {{TransferRequest::READ, local.data(), seg, 20000, 4096},
                          {TransferRequest::READ, local.data(), seg, 0, 4096}});
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].s, INVALID);
  EXPECT_EQ(r[1].s, COMPLETED);
}

// A block device as the second file: a loop device over a file (skipped,
// with the reason, where losetup cannot attach one). The segment's server is
// this host, so the engine uses file_path (no local_path_map).
TEST_F(TeNvmeof, LoopDeviceBehindARegularFile) {
  const std::string backing = dir_.file("loop.img");
  constexpr size_t kDev = 1 << 20;
  ASSERT_TRUE(nt::write_pattern_file(backing, kDev, 31));
  std::string dev;
  if (run_process({"/bin/sh", "-c", "losetup -f --show " + backing}, {}, 20, &dev) != 0) {
    GTEST_SKIP() << "losetup cannot attach a loop device here: " << dev;
  }
  while (!dev.empty() && (dev.back() == '\n' || dev.back() == ' ')) dev.pop_back();
  struct Detach {
    std::string dev;
    ~Detach() {
      std::string out;
      run_process({"/bin/sh", "-c", "losetup -d " + dev}, {}, 20, &out);
    }
  } detach{dev};
  Services services;
  const std::string url = services.start_metadata_server();
  ASSERT_FALSE(url.empty());
  register_segment(url, "loopseg", {f0_, dev}, {}, "127.0.0.1");
  auto engine = make_engine(url);
  const SegmentHandle seg = engine->openSegment("loopseg");
  ASSERT_GE(seg, 0);
  std::vector<SegmentBufferInfo> bufs;
  ASSERT_EQ(engine->getSegmentBuffers(seg, bufs), 0);
  ASSERT_EQ(bufs.size(), 2u);
  EXPECT_EQ(bufs[1].length, kDev);
  EXPECT_EQ(bufs[1].path, dev);
  nt::AlignedBuffer local(3 * 4096);
  ASSERT_NE(local.data, nullptr);
  ASSERT_EQ(engine->registerLocalMemory(local.data, local.size, "cpu:0"), 0);
  // Across the boundary (unaligned), then aligned inside the device.
  const Op ops[] = {{kLen0 - 500, 5000, 41}, {kLen0 + 8192, 8192, 42}};
  for (const Op& op : ops) {
    const std::vector<uint8_t> v = nt::pattern_bytes(op.seed, op.offset, op.length);
    std::copy(v.begin(), v.end(), local.data);
    auto r = run_batch(*engine, {{TransferRequest::WRITE, local.data, seg, op.offset, op.length}});
    ASSERT_EQ(r.size(), 1u);
    ASSERT_EQ(r[0].s, COMPLETED);
    std::fill(local.data, local.data + op.length, 0);
    r = run_batch(*engine, {{TransferRequest::READ, local.data, seg, op.offset, op.length}});
    ASSERT_EQ(r.size(), 1u);
    ASSERT_EQ(r[0].s, COMPLETED);
    EXPECT_TRUE(std::equal(v.begin(), v.end(), local.data)) << op.offset;
  }
  EXPECT_EQ(engine->closeSegment(seg), 0);
  engine.reset();
  // Read back with read(): the file's tail and the device.
  const std::vector<uint8_t> f0 = nt::read_file(f0_);
  const std::vector<uint8_t> d = nt::read_file(dev);
  ASSERT_EQ(f0.size(), kLen0);
  ASSERT_EQ(d.size(), kDev);
  const std::vector<uint8_t> a = nt::pattern_bytes(41, kLen0 - 500, 5000);
  EXPECT_TRUE(std::equal(a.begin(), a.begin() + 500, f0.begin() + kLen0 - 500));
  EXPECT_TRUE(std::equal(a.begin() + 500, a.end(), d.begin()));
  const std::vector<uint8_t> b = nt::pattern_bytes(42, kLen0 + 8192, 8192);
  EXPECT_TRUE(std::equal(b.begin(), b.end(), d.begin() + 8192));
  EXPECT_EQ(d[8192 - 1], nt::pattern(31, 8192 - 1)) << "the byte before is untouched";
}

TEST_F(TeNvmeof, ToolRegistersMountsShowsAndRefuses) {
  Services services;
  const std::string url = services.start_metadata_server();
  ASSERT_FALSE(url.empty());
  std::string out;
  register_segment(url, "seg", {f0_, f1_}, {});
  EXPECT_EQ(tool({"register", "--metadata", url, "--segment", "seg", "--server", "x", f0_}, &out),
            1)
      << "exists: " << out;
  EXPECT_NE(out.find("exists"), std::string::npos) << out;
  ASSERT_EQ(tool({"mount", "--metadata", url, "--segment", "seg", "--host", "node02", "--buffer",
                  "1", "--path", "/mnt/te/node02/disk1"},
                 &out),
            0)
      << out;
  ASSERT_EQ(tool({"show", "--metadata", url, "--segment", "seg", "--json"}, &out), 0) << out;
  std::string why;
  const size_t brace = out.find('{');
  ASSERT_NE(brace, std::string::npos) << out;
  auto desc = metadata::decode_file_segment(out.substr(brace), &why);
  ASSERT_TRUE(desc.ok()) << why << ": " << out;
  EXPECT_EQ(desc->server_name, "storage-node");
  ASSERT_EQ(desc->buffers.size(), 2u);
  EXPECT_EQ(desc->buffers[0].length, kLen0);
  EXPECT_EQ(desc->buffers[0].file_path, f0_);
  EXPECT_EQ(desc->buffers[1].length, kLen1);
  EXPECT_TRUE(desc->buffers[0].local_path_map.empty());
  EXPECT_EQ(desc->buffers[1].local_path_map.at("node02"), "/mnt/te/node02/disk1");
  ASSERT_EQ(tool({"show", "--metadata", url, "--segment", "seg"}, &out), 0) << out;
  EXPECT_NE(out.find("mounted on node02 at /mnt/te/node02/disk1"), std::string::npos) << out;

  // Errors: bad arguments (2), a failing store or file (1).
  EXPECT_EQ(tool({"mount", "--metadata", url, "--segment", "seg", "--host", "h", "--buffer", "2",
                  "--path", "/p"},
                 &out),
            2)
      << out;
  EXPECT_EQ(tool({"mount", "--metadata", url, "--segment", "seg", "--buffer", "x"}, &out), 2);
  EXPECT_EQ(tool({"register", "--metadata", "P2PHANDSHAKE", "--segment", "s", "--server", "a", f0_},
                 &out),
            2);
  EXPECT_NE(out.find("P2PHANDSHAKE has no metadata store"), std::string::npos) << out;
  EXPECT_EQ(tool({"register", "--metadata", url, "--segment", "s2", "--server", "a"}, &out), 2);
  EXPECT_EQ(tool({"register", "--metadata", url, "--segment", "s2", "--server", "a",
                  dir_.file("missing")},
                 &out),
            1);
  EXPECT_NE(out.find("missing"), std::string::npos) << out;
  EXPECT_EQ(tool({"frobnicate"}, &out), 2);
  EXPECT_EQ(tool({"show", "--metadata", url, "--segment", "nope"}, &out), 1);
  EXPECT_EQ(tool({"-h"}, &out), 0);
  EXPECT_NE(out.find("local_path_map"), std::string::npos);
  ASSERT_EQ(
      tool({"unmount", "--metadata", url, "--segment", "seg", "--host", "node02", "--buffer", "1"},
           &out),
      0)
      << out;
  ASSERT_EQ(tool({"unregister", "--metadata", url, "--segment", "seg"}, &out), 0) << out;
  EXPECT_EQ(tool({"show", "--metadata", url, "--segment", "seg"}, &out), 1);
}

}  // namespace
}  // namespace mc::te::test
