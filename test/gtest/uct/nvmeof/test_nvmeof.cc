// SPDX-License-Identifier: Apache-2.0
// The nvmeof transport through the UCT API, loaded as a module: files in a
// temporary directory (and a loop device when losetup works) registered with
// mem_reg_file, written and read by put/get zcopy, checked by reading back.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>

#include "nvmeof_test_util.h"
#include "ucs/config/sources.h"
#include "ucs/datastruct/wire.h"
#include "ucs/sys/sys.h"
#include "uct/api/ep.h"
#include "uct/api/iface.h"
#include "uct/base/component_loader.h"
#include "uct/base/rkey_codec.h"

namespace mc::uct::nvmeof::test::nvmeof_module {
namespace {

constexpr size_t kFileSize = 1 << 20;
constexpr uint64_t kFileSeed = 3;

struct Done {
  Done() {
    comp.arg = this;
    comp.func = [](Completion* c) { static_cast<Done*>(c->arg)->fired = true; };
  }
  Completion comp;
  bool fired = false;
};

using Env = std::map<std::string, std::string>;

// Engine and O_DIRECT choice as parameters.
class NvmeofTest : public ::testing::TestWithParam<Env> {
 protected:
  void SetUp() override {
    Component* comp = find_component("nvmeof");
    ASSERT_NE(comp, nullptr) << "libmc_uct_nvmeof.so was not loaded (see mc_info -m)";
    auto sources = ucs::config::Sources::from(GetParam(), {});
    ASSERT_TRUE(sources.ok());
    auto md = comp->md_open("nvmeof", *sources);
    ASSERT_TRUE(md.ok());
    md_ = std::move(*md);
    IfaceParams params;
    params.tl_name = "nvmeof";
    params.dev_name = "file";
    params.sources = &*sources;
    auto iface = md_->iface_open(params);
    ASSERT_TRUE(iface.ok());
    iface_ = std::move(*iface);
    auto ep = iface_->ep_create(iface_->device_address(), iface_->iface_address());
    ASSERT_TRUE(ep.ok());
    ep_ = std::move(*ep);
    ASSERT_TRUE(dir_.ok());
    path_ = dir_.file("segment0");
    ASSERT_TRUE(write_pattern_file(path_, kFileSize, kFileSeed));
  }

  // Registers `path` and unpacks its rkey as an initiator would.
  std::unique_ptr<Rkey> rkey_of(const std::string& path, unsigned access,
                                std::unique_ptr<MemHandle>* memh) {
    auto h = md_->mem_reg_file(path, access);
    EXPECT_TRUE(h.ok()) << ucs::status_string(h.status());
    if (!h.ok()) return nullptr;
    std::vector<uint8_t> packed;
    EXPECT_EQ(md_->mkey_pack(**h, &packed), Status::Ok);
    auto r = md_->rkey_unpack(packed);
    EXPECT_TRUE(r.ok());
    *memh = std::move(*h);
    return r.ok() ? std::move(*r) : nullptr;
  }

  // The final status of one operation (progress until it completes).
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

  // Writes the pattern of `seed` at `offset` from memory at `buf`, reads it
  // back from the file, then reads it through get_zcopy into other memory.
  void round_trip(const Rkey& rkey, uint8_t* buf, size_t len, uint64_t offset, uint64_t seed) {
    const std::vector<uint8_t> want = pattern_bytes(seed, offset, len);
    std::copy(want.begin(), want.end(), buf);
    ASSERT_EQ(run(true, buf, len, offset, rkey), Status::Ok);
    const std::vector<uint8_t> file = read_file(path_);
    ASSERT_EQ(file.size(), kFileSize) << "the file changed length";
    EXPECT_TRUE(std::equal(want.begin(), want.end(), file.begin() + offset)) << "file content";
    std::fill(buf, buf + len, 0);
    ASSERT_EQ(run(false, buf, len, offset, rkey), Status::Ok);
    EXPECT_TRUE(std::equal(want.begin(), want.end(), buf)) << "data read back";
  }

  std::unique_ptr<MemoryDomain> md_;
  std::unique_ptr<Iface> iface_;
  std::unique_ptr<Endpoint> ep_;
  TempDir dir_;
  std::string path_;
};

TEST_P(NvmeofTest, AttributesSayFilesAndHostMemory) {
  const MdAttr m = md_->query();
  EXPECT_TRUE(m.flags & kMdRegFile);
  EXPECT_FALSE(m.flags & kMdReg);  // host memory needs no registration
  EXPECT_EQ(m.reg_mem_types, mem_type_bit(MemType::File));
  const IfaceAttr a = iface_->query();
  EXPECT_EQ(a.cap & (kCapPutZcopy | kCapGetZcopy | kCapConnectToSelf),
            kCapPutZcopy | kCapGetZcopy | kCapConnectToSelf);
  EXPECT_FALSE(a.cap & kCapConnectToIface);  // never a lane to a peer
  EXPECT_EQ(a.access_mem_types, mem_type_bit(MemType::Host));
  std::string why;
  EXPECT_FALSE(iface_->is_reachable(iface_->device_address(), std::vector<uint8_t>(8, 1), &why));
  EXPECT_NE(why.find("own iface"), std::string::npos) << why;
}

TEST_P(NvmeofTest, AlignedWriteAndReadBack) {
  std::unique_ptr<MemHandle> h;
  auto rkey = rkey_of(path_, kAccessAll, &h);
  ASSERT_TRUE(rkey);
  EXPECT_EQ(h->length(), kFileSize);
  EXPECT_EQ(h->mem_type(), MemType::File);
  AlignedBuffer buf(256 * 1024);
  round_trip(*rkey, buf.data, 256 * 1024, 64 * 1024, 21);
  round_trip(*rkey, buf.data, 4096, 0, 22);
  round_trip(*rkey, buf.data, 4096, kFileSize - 4096, 23);  // the last block
}

TEST_P(NvmeofTest, UnalignedOffsetsSizesAndAddresses) {
  std::unique_ptr<MemHandle> h;
  auto rkey = rkey_of(path_, kAccessAll, &h);
  ASSERT_TRUE(rkey);
  AlignedBuffer buf(70000);
  round_trip(*rkey, buf.data + 3, 5000, 1234, 31);
  round_trip(*rkey, buf.data, 1, kFileSize - 1, 32);  // the very last byte
  round_trip(*rkey, buf.data + 512, 65536 + 7, 4096, 33);
}

TEST_P(NvmeofTest, GatherWriteAndScatterRead) {
  std::unique_ptr<MemHandle> h;
  auto rkey = rkey_of(path_, kAccessAll, &h);
  ASSERT_TRUE(rkey);
  std::vector<uint8_t> a = pattern_bytes(41, 10000, 100), b = pattern_bytes(41, 10100, 9000);
  Iov iov[2] = {{a.data(), a.size(), nullptr}, {b.data(), b.size(), nullptr}};
  Done w;
  ASSERT_EQ(ep_->put_zcopy(iov, 2, 10000, *rkey, &w.comp), Status::InProgress);
  Done f;
  ASSERT_EQ(ep_->flush(&f.comp), Status::InProgress);  // waits for the write
  for (long spins = 0; !f.fired && spins < 100000000; ++spins) iface_->progress();
  ASSERT_TRUE(w.fired && f.fired);
  EXPECT_EQ(ep_->flush(nullptr), Status::Ok);
  const std::vector<uint8_t> file = read_file(path_);
  EXPECT_TRUE(std::equal(file.begin() + 10000, file.begin() + 19100,
                         pattern_bytes(41, 10000, 9100).begin()));
  std::vector<uint8_t> c(5000), d(4100);
  Iov in[2] = {{c.data(), c.size(), nullptr}, {d.data(), d.size(), nullptr}};
  Done r;
  ASSERT_EQ(ep_->get_zcopy(in, 2, 10000, *rkey, &r.comp), Status::InProgress);
  for (long spins = 0; !r.fired && spins < 100000000; ++spins) iface_->progress();
  ASSERT_EQ(r.comp.status, Status::Ok);
  c.insert(c.end(), d.begin(), d.end());
  EXPECT_EQ(c, pattern_bytes(41, 10000, 9100));
}

TEST_P(NvmeofTest, OutsideTheFileIsInvalidAndNothingIsWrittenPastTheEnd) {
  std::unique_ptr<MemHandle> h;
  auto rkey = rkey_of(path_, kAccessAll, &h);
  ASSERT_TRUE(rkey);
  std::vector<uint8_t> buf(8192, 0xab);
  EXPECT_EQ(run(true, buf.data(), 20, kFileSize - 10, *rkey), Status::InvalidParam);
  EXPECT_EQ(run(true, buf.data(), 1, kFileSize, *rkey), Status::InvalidParam);
  EXPECT_EQ(run(false, buf.data(), 8192, UINT64_MAX - 100, *rkey), Status::InvalidParam);
  EXPECT_EQ(file_size(path_), kFileSize);
  EXPECT_EQ(read_file(path_), pattern_bytes(kFileSeed, 0, kFileSize));
}

TEST_P(NvmeofTest, TruncatedFileGivesCleanErrors) {
  std::unique_ptr<MemHandle> h;
  auto rkey = rkey_of(path_, kAccessAll, &h);
  ASSERT_TRUE(rkey);
  ASSERT_EQ(truncate(path_.c_str(), kFileSize / 2), 0);
  std::vector<uint8_t> buf(8192, 0xcd);
  // Inside the registered length, outside what the file now holds.
  EXPECT_EQ(run(false, buf.data(), 8192, kFileSize / 2 + 4096, *rkey), Status::InvalidParam);
  EXPECT_EQ(run(true, buf.data(), 8192, kFileSize / 2 - 4096, *rkey), Status::InvalidParam);
  EXPECT_EQ(file_size(path_), kFileSize / 2) << "a write grew the truncated file";
  // What is still inside works.
  EXPECT_EQ(run(false, buf.data(), 4096, kFileSize / 2 - 4096, *rkey), Status::Ok);
  EXPECT_TRUE(std::equal(buf.begin(), buf.begin() + 4096,
                         pattern_bytes(kFileSeed, kFileSize / 2 - 4096, 4096).begin()));
}

TEST_P(NvmeofTest, ReadOnlyRegistrationRefusesWrites) {
  std::unique_ptr<MemHandle> h;
  auto rkey = rkey_of(path_, kAccessRemoteRead, &h);
  ASSERT_TRUE(rkey);
  std::vector<uint8_t> buf(4096, 0x11);
  EXPECT_EQ(run(true, buf.data(), buf.size(), 0, *rkey), Status::InvalidParam);
  EXPECT_EQ(run(false, buf.data(), buf.size(), 0, *rkey), Status::Ok);
  EXPECT_EQ(read_file(path_), pattern_bytes(kFileSeed, 0, kFileSize));
}

TEST_P(NvmeofTest, ReadOnlyFileCannotBeRegisteredForWriting) {
  // Root writes files of mode 0444, but not immutable ones (chattr +i).
  const bool root = geteuid() == 0;
  if (root) {
    if (std::system(("chattr +i " + path_ + " 2>/dev/null").c_str()) != 0) {
      GTEST_SKIP() << "running as root, and chattr +i does not work on " << path_
                   << "; the read-only loop device test covers this";
    }
  } else {
    ASSERT_EQ(chmod(path_.c_str(), 0444), 0);
  }
  EXPECT_EQ(md_->mem_reg_file(path_, kAccessAll).status(), Status::IoError);
  std::unique_ptr<MemHandle> h;
  auto rkey = rkey_of(path_, kAccessRemoteRead, &h);
  EXPECT_TRUE(rkey);
  std::vector<uint8_t> buf(4096);
  if (rkey) {
    EXPECT_EQ(run(false, buf.data(), buf.size(), 0, *rkey), Status::Ok);
  }
  if (root) {
    EXPECT_EQ(std::system(("chattr -i " + path_).c_str()), 0);
  }
}

TEST_P(NvmeofTest, RegistrationRefusals) {
  EXPECT_EQ(md_->mem_reg_file(dir_.file("missing"), kAccessAll).status(), Status::NoElem);
  EXPECT_EQ(md_->mem_reg_file("", kAccessAll).status(), Status::InvalidParam);
  std::vector<uint8_t> host(64);
  EXPECT_EQ(md_->mem_reg(host.data(), host.size(), kAccessAll).status(), Status::Unsupported);
  std::unique_ptr<MemHandle> h;
  auto local_only = md_->mem_reg_file(path_, kAccessLocal);
  ASSERT_TRUE(local_only.ok());
  std::vector<uint8_t> packed;
  EXPECT_EQ(md_->mkey_pack(**local_only, &packed), Status::InvalidParam);
}

TEST_P(NvmeofTest, RkeysAreChecked) {
  std::unique_ptr<MemHandle> h;
  ASSERT_TRUE(rkey_of(path_, kAccessAll, &h));
  std::vector<uint8_t> packed;
  ASSERT_EQ(md_->mkey_pack(*h, &packed), Status::Ok);
  for (size_t n = 0; n < packed.size(); ++n) {
    EXPECT_FALSE(md_->rkey_unpack(std::span(packed.data(), n)).ok()) << "truncated to " << n;
  }
  // A key made on another host names a path that may mean another disk here.
  std::vector<uint8_t> payload, foreign;
  ucs::WireWriter w(&payload);
  w.u64(ucs::boot_id_hash() ^ 1);
  w.u64(kFileSize);
  w.u32(kAccessAll);
  w.str(path_);
  rkey_pack_envelope("nvmeof", payload, &foreign);
  auto rkey = md_->rkey_unpack(foreign);
  ASSERT_TRUE(rkey.ok());
  std::vector<uint8_t> buf(16);
  EXPECT_EQ(run(false, buf.data(), buf.size(), 0, **rkey), Status::InvalidParam);
}

INSTANTIATE_TEST_SUITE_P(
    Engines, NvmeofTest,
    ::testing::Values(Env{}, Env{{"MC_NVMEOF_IO_URING", "n"}},
                      Env{{"MC_NVMEOF_DIRECT_IO", "n"}, {"MC_NVMEOF_QUEUE_DEPTH", "1"}}),
    [](const auto& info) {
      return info.index == 0 ? "io_uring_direct" : info.index == 1 ? "sync" : "buffered_qd1";
    });

}  // namespace
}  // namespace mc::uct::nvmeof::test::nvmeof_module
