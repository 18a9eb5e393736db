// SPDX-License-Identifier: Apache-2.0
// The nvmeof transport on a block device: a loop device over a file in a
// temporary directory (skipped, with the reason, where losetup cannot attach).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <memory>

#include "nvmeof_test_util.h"
#include "ucs/config/sources.h"
#include "uct/api/ep.h"
#include "uct/api/iface.h"
#include "uct/base/component_loader.h"

namespace mc::uct::nvmeof::test::nvmeof_loop {
namespace {

constexpr size_t kDevSize = 4 << 20;

// Runs `cmd`; its first output line, or empty when it failed (`why` says why).
std::string run_command(const std::string& cmd, std::string* why) {
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return *why = "popen failed", "";
  char line[512] = {0};
  std::string out = fgets(line, sizeof(line), p) ? line : "";
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  const int rc = pclose(p);
  if (rc != 0) return *why = "'" + cmd + "' failed: " + out, "";
  return out;
}

class LoopDevice {
 public:
  LoopDevice(const std::string& backing, bool read_only, std::string* why) {
    dev_ = run_command(std::string("losetup ") + (read_only ? "-r " : "") + "-f --show " + backing,
                       why);
  }
  ~LoopDevice() {
    std::string why;
    if (!dev_.empty()) run_command("losetup -d " + dev_, &why);
  }
  const std::string& path() const { return dev_; }

 private:
  std::string dev_;
};

struct Done {
  Done() {
    comp.arg = this;
    comp.func = [](Completion* c) { static_cast<Done*>(c->arg)->fired = true; };
  }
  Completion comp;
  bool fired = false;
};

class NvmeofLoopTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Component* comp = find_component("nvmeof");
    ASSERT_NE(comp, nullptr) << "libmc_uct_nvmeof.so was not loaded (see mc_info -m)";
    auto md = comp->md_open("nvmeof", *ucs::config::Sources::from({}, {}));
    ASSERT_TRUE(md.ok());
    md_ = std::move(*md);
    IfaceParams params;
    params.tl_name = "nvmeof";
    params.dev_name = "file";
    auto iface = md_->iface_open(params);
    ASSERT_TRUE(iface.ok());
    iface_ = std::move(*iface);
    auto ep = iface_->ep_create(iface_->device_address(), iface_->iface_address());
    ASSERT_TRUE(ep.ok());
    ep_ = std::move(*ep);
    ASSERT_TRUE(dir_.ok());
    backing_ = dir_.file("disk.img");
    ASSERT_TRUE(write_pattern_file(backing_, kDevSize, 7));
  }

  Status run(bool write, uint8_t* buf, size_t len, uint64_t offset, const Rkey& rkey) {
    Iov iov{buf, len, nullptr};
    Done d;
    const Status s = write ? ep_->put_zcopy(&iov, 1, offset, rkey, &d.comp)
                           : ep_->get_zcopy(&iov, 1, offset, rkey, &d.comp);
    if (s != Status::InProgress) return s;
    for (long spins = 0; !d.fired && spins < 100000000; ++spins) iface_->progress();
    EXPECT_TRUE(d.fired);
    return d.comp.status;
  }

  std::unique_ptr<Rkey> rkey_of(const std::string& path, unsigned access,
                                std::unique_ptr<MemHandle>* memh) {
    auto h = md_->mem_reg_file(path, access);
    if (!h.ok()) return nullptr;
    std::vector<uint8_t> packed;
    EXPECT_EQ(md_->mkey_pack(**h, &packed), Status::Ok);
    auto r = md_->rkey_unpack(packed);
    *memh = std::move(*h);
    return r.ok() ? std::move(*r) : nullptr;
  }

  std::unique_ptr<MemoryDomain> md_;
  std::unique_ptr<Iface> iface_;
  std::unique_ptr<Endpoint> ep_;
  TempDir dir_;
  std::string backing_;
};

TEST_F(NvmeofLoopTest, WritesReachTheBackingFileAndReadsComeBack) {
  std::string why;
  LoopDevice loop(backing_, false, &why);
  if (loop.path().empty()) GTEST_SKIP() << "no loop device: " << why;
  std::unique_ptr<MemHandle> h;
  auto rkey = rkey_of(loop.path(), kAccessAll, &h);
  ASSERT_TRUE(rkey);
  EXPECT_EQ(h->length(), kDevSize);
  AlignedBuffer buf(128 * 1024);
  const std::vector<uint8_t> aligned = pattern_bytes(51, 65536, 128 * 1024);
  std::copy(aligned.begin(), aligned.end(), buf.data);
  ASSERT_EQ(run(true, buf.data, aligned.size(), 65536, *rkey), Status::Ok);  // O_DIRECT
  const std::vector<uint8_t> odd = pattern_bytes(52, 4099, 3001);
  std::copy(odd.begin(), odd.end(), buf.data + 1);
  ASSERT_EQ(run(true, buf.data + 1, odd.size(), 4099, *rkey), Status::Ok);  // buffered
  // Past the device's end: refused, and the backing file keeps its size.
  EXPECT_EQ(run(true, buf.data, 4096, kDevSize - 2048, *rkey), Status::InvalidParam);
  const int fd = ::open(loop.path().c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(fsync(fd), 0);
  ::close(fd);
  const std::vector<uint8_t> file = read_file(backing_);
  ASSERT_EQ(file.size(), kDevSize);
  EXPECT_TRUE(std::equal(aligned.begin(), aligned.end(), file.begin() + 65536));
  EXPECT_TRUE(std::equal(odd.begin(), odd.end(), file.begin() + 4099));
  EXPECT_TRUE(std::equal(file.begin(), file.begin() + 4099, pattern_bytes(7, 0, 4099).begin()));
  std::fill(buf.data, buf.data + 8192, 0);
  ASSERT_EQ(run(false, buf.data, 8192, 65536, *rkey), Status::Ok);
  EXPECT_TRUE(std::equal(buf.data, buf.data + 8192, aligned.begin()));
}

TEST_F(NvmeofLoopTest, ReadOnlyDeviceRefusesWriteRegistration) {
  std::string why;
  LoopDevice loop(backing_, true, &why);
  if (loop.path().empty()) GTEST_SKIP() << "no loop device: " << why;
  EXPECT_EQ(md_->mem_reg_file(loop.path(), kAccessAll).status(), Status::IoError);  // EROFS
  std::unique_ptr<MemHandle> h;
  auto rkey = rkey_of(loop.path(), kAccessRemoteRead, &h);
  ASSERT_TRUE(rkey);
  AlignedBuffer buf(4096);
  ASSERT_EQ(run(false, buf.data, 4096, 8192, *rkey), Status::Ok);
  EXPECT_TRUE(std::equal(buf.data, buf.data + 4096, pattern_bytes(7, 8192, 4096).begin()));
}

}  // namespace
}  // namespace mc::uct::nvmeof::test::nvmeof_loop
