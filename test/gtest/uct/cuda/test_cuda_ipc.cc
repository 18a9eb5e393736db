// SPDX-License-Identifier: Apache-2.0
// cuda_ipc over the fake CUDA driver, between two real processes: a forked
// owner registers fake GPU memory (cuMemAlloc-like, or a VMM allocation)
// and hands over its rkey; this process maps it and puts and gets from its
// own fake GPU memory. Covers the rkey codec, the owner's checks (stale,
// forged token, forged range, gone owner), the mapping cache and its
// invalidation, and reachability. White-box: the md is built from the
// module's sources compiled into mc_gtest.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <vector>

#include "common/pipe_util.h"
#include "ucs/config/sources.h"
#include "uct/api/ep.h"
#include "uct/api/iface.h"
#include "uct/base/rkey_codec.h"
#include "uct/cuda/base/cu_driver.h"
#include "uct/cuda/cuda_ipc/cuda_ipc_cache.h"
#include "uct/cuda/cuda_ipc/cuda_ipc_iface.h"
#include "uct/cuda/cuda_ipc/cuda_ipc_key.h"
#include "uct/cuda/cuda_ipc/cuda_ipc_md.h"
#include "uct/ib/fake_gpu.h"

namespace mc::uct::cuda::ipc_test {
namespace {

using test::FakeCuda;
using test::FakeGpuBuffer;

std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(i * 31 + seed + (i >> 10));
  return v;
}

// The IMEX channel of a fabric test: a file of the test's own, named by the
// test process (the owner it forks reads the same name).
std::string& imex_channel() {
  static std::string path = "/tmp/mc-gtest-imex-channel-" + std::to_string(getpid());
  return path;
}

// With `fabric`, NVML is the fake's and the IMEX channel exists.
CudaIpcConfig test_config(bool fabric = false) {
  std::map<std::string, std::string> env;
  if (fabric) {
    env = {{"MC_CUDA_IPC_NVML", FakeCuda::path()}, {"MC_CUDA_IPC_IMEX_CHANNEL", imex_channel()}};
  }
  return *ucs::config::read_table<CudaIpcConfig>(cuda_ipc_config_table(),
                                                 *ucs::config::Sources::from(env, {}));
}

const CuDriver* fake_driver() {
  std::string why;
  Result<const CuDriver*> d = cu_driver_load(FakeCuda::path(), &why);
  EXPECT_TRUE(d.ok()) << why;
  return d.ok() ? *d : nullptr;
}

// --- the codec and the cache, pure -------------------------------------------

CudaIpcKey sample_key() {
  CudaIpcKey k;
  k.kind = IpcHandleKind::PosixFd;
  k.device_uuid[0] = 7;
  k.alloc_base = 0x7f0000000000;
  k.alloc_length = 1 << 21;
  k.reg_base = k.alloc_base + 4096;
  k.reg_length = 8192;
  k.access = kAccessRemote;
  k.owner_pid = 1234;
  k.export_id = 5;
  k.token = 0x1122334455667788;
  k.handle[3] = 9;
  k.socket = "mc-cuda-ipc-1234-00ff";
  return k;
}

TEST(CudaIpcKeyCodec, RoundTripsAndRefusesEveryTruncation) {
  const CudaIpcKey k = sample_key();
  std::vector<uint8_t> packed;
  cuda_ipc_key_pack(k, &packed);
  std::string error;
  Result<CudaIpcKey> back = cuda_ipc_key_unpack(packed, &error);
  ASSERT_TRUE(back.ok()) << error;
  EXPECT_EQ(*back, k);
  for (size_t n = 0; n < packed.size(); ++n) {
    EXPECT_FALSE(cuda_ipc_key_unpack(std::span(packed).first(n), &error).ok()) << n;
  }
  packed.push_back(0);
  EXPECT_FALSE(cuda_ipc_key_unpack(packed, &error).ok());
  EXPECT_NE(error.find("bytes after the fixed part"), std::string::npos) << error;
}

TEST(CudaIpcKeyCodec, NamesABadVersionKindAndRange) {
  std::string error;
  std::vector<uint8_t> packed;
  cuda_ipc_key_pack(sample_key(), &packed);
  std::vector<uint8_t> v = packed;
  v[0] = 2;
  EXPECT_FALSE(cuda_ipc_key_unpack(v, &error).ok());
  EXPECT_NE(error.find("version 2, this build reads version 1"), std::string::npos) << error;
  v = packed;
  v[1] = 9;
  EXPECT_FALSE(cuda_ipc_key_unpack(v, &error).ok());
  EXPECT_NE(error.find("unknown handle kind 9"), std::string::npos) << error;
  CudaIpcKey k = sample_key();
  k.reg_length = k.alloc_length;  // starts 4096 in: ends past the allocation
  packed.clear();
  cuda_ipc_key_pack(k, &packed);
  EXPECT_FALSE(cuda_ipc_key_unpack(packed, &error).ok());
  EXPECT_NE(error.find("registered range outside the exported allocation"), std::string::npos)
      << error;
}

TEST(CudaIpcMappingCache, OpensOnceInvalidatesAndClosesWhenTheLastHolderGoes) {
  IpcMappingCache cache(1);
  int opened = 0, closed = 0;
  auto opener = [&]() -> Result<std::shared_ptr<IpcMapping>> {
    ++opened;
    return std::make_shared<IpcMapping>(0x1000, 4096, 0, [&] { ++closed; });
  };
  Result<std::shared_ptr<IpcMapping>> a = cache.get("s", 1, opener);
  Result<std::shared_ptr<IpcMapping>> b = cache.get("s", 1, opener);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->get(), b->get());
  EXPECT_EQ(opened, 1);
  EXPECT_EQ(cache.hits(), 1u);
  cache.invalidate("s", 1, "the owner unregistered it");
  EXPECT_EQ((*a)->stale_reason(), "the owner unregistered it");
  EXPECT_EQ(cache.size(), 0u);
  EXPECT_EQ(closed, 0) << "closed while an rkey holds it";
  a = Status::NoElem;
  b = Status::NoElem;
  EXPECT_EQ(closed, 1);
  // Beyond the bound, unreferenced mappings are closed oldest first.
  ASSERT_TRUE(cache.get("s", 2, opener).ok());
  ASSERT_TRUE(cache.get("s", 3, opener).ok());
  EXPECT_EQ(cache.size(), 1u);
  EXPECT_EQ(closed, 2);
  cache.invalidate("s", 0, "the owner process has gone");
  EXPECT_EQ(cache.size(), 0u);
  EXPECT_EQ(closed, 3);
}

// --- two processes --------------------------------------------------------------

struct Command {
  char op;        // 'R' register, 'C' check, 'U' unregister, 'Q' quit
  uint8_t vmm;    // R: a VMM allocation
  uint8_t seed;   // C: the pattern expected
  uint64_t size;  // R, C
};

// The owner: registers fake GPU memory and answers commands. Exit status:
// 0, or the step that failed.
int owner_main(int cmd_fd, int reply_fd, bool fabric) {
  const CuDriver* driver = fake_driver();
  if (!driver) return 2;
  Result<std::unique_ptr<CudaIpcMd>> md = CudaIpcMd::create(driver, test_config(fabric));
  if (!md.ok()) return 3;
  IfaceParams params;
  params.tl_name = "cuda_ipc";
  params.dev_name = "cuda";
  Result<std::unique_ptr<Iface>> iface = (*md)->iface_open(params);
  if (!iface.ok()) return 4;
  std::vector<std::unique_ptr<FakeGpuBuffer>> buffers;
  std::vector<std::unique_ptr<MemHandle>> handles;
  for (;;) {
    Command c{};
    if (!mc::test::read_all(cmd_fd, &c, sizeof(c))) return 5;
    if (c.op == 'Q') return 0;
    if (c.op == 'R') {
      buffers.push_back(std::make_unique<FakeGpuBuffer>(c.size, c.vmm != 0));
      if (!buffers.back()->ok()) return 6;
      std::memset(buffers.back()->view, 0xee, c.size);
      Result<std::unique_ptr<MemHandle>> h =
          (*md)->mem_reg(buffers.back()->device, c.size, kAccessAll);
      std::vector<uint8_t> packed;
      if (h.ok()) {
        if ((*md)->mkey_pack(**h, &packed) != Status::Ok) return 7;
        handles.push_back(std::move(*h));
      }
      if (!mc::test::write_blob(reply_fd, (*iface)->device_address()) ||
          !mc::test::write_blob(reply_fd, (*iface)->iface_address()) ||
          !mc::test::write_blob(reply_fd, packed)) {
        return 8;
      }
    } else if (c.op == 'C') {
      const std::vector<uint8_t> want = pattern(c.size, c.seed);
      const char ok = !buffers.empty() && buffers.back()->size >= c.size &&
                              std::memcmp(buffers.back()->view, want.data(), c.size) == 0
                          ? 'Y'
                          : 'N';
      if (!mc::test::write_all(reply_fd, &ok, 1)) return 9;
    } else if (c.op == 'U') {
      handles.clear();  // each peer that opened them is told before the answer
      const char ok = 'Y';
      if (!mc::test::write_all(reply_fd, &ok, 1)) return 10;
    }
  }
}

struct Done {
  Done() {
    comp.arg = this;
    comp.func = [](Completion* c) { static_cast<Done*>(c->arg)->fired = true; };
  }
  Completion comp;
  bool fired = false;
};

class CudaIpcTwoProc : public ::testing::Test {
 protected:
  /// Fabric handles switched on in the fake driver (both processes).
  virtual bool fabric() const { return false; }

  void SetUp() override {
    ASSERT_TRUE(FakeCuda::get().ok()) << FakeCuda::path();
    fabric_ = fabric();
    FakeCuda::get().set(0, fabric_ ? 1 : 0);
    if (fabric_) {
      FILE* f = std::fopen(imex_channel().c_str(), "w");
      ASSERT_TRUE(f) << imex_channel();
      std::fclose(f);
    }
    const bool fabric = fabric_;
    int cmd[2], reply[2];
    ASSERT_EQ(pipe(cmd), 0);
    ASSERT_EQ(pipe(reply), 0);
    pid_ = fork();
    ASSERT_GE(pid_, 0) << strerror(errno);
    if (pid_ == 0) {
      close(cmd[1]);
      close(reply[0]);
      _exit(owner_main(cmd[0], reply[1], fabric_));
    }
    close(cmd[0]);
    close(reply[1]);
    cmd_fd_ = cmd[1];
    reply_fd_ = reply[0];
    const CuDriver* driver = fake_driver();
    ASSERT_TRUE(driver);
    Result<std::unique_ptr<CudaIpcMd>> md = CudaIpcMd::create(driver, test_config(fabric));
    ASSERT_TRUE(md.ok());
    md_ = std::move(*md);
    IfaceParams params;
    params.tl_name = "cuda_ipc";
    params.dev_name = "cuda";
    Result<std::unique_ptr<Iface>> iface = md_->iface_open(params);
    ASSERT_TRUE(iface.ok());
    iface_ = std::move(*iface);
  }

  void TearDown() override {
    if (pid_ > 0) quit();
    FakeCuda::get().set(0, 0);
    if (fabric_) std::remove(imex_channel().c_str());
    if (cmd_fd_ >= 0) close(cmd_fd_);
    if (reply_fd_ >= 0) close(reply_fd_);
  }

  void quit() {
    const Command q{'Q', 0, 0, 0};
    (void)mc::test::write_all(cmd_fd_, &q, sizeof(q));
    int status = 0;
    ASSERT_EQ(waitpid(pid_, &status, 0), pid_);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "owner exit status " << status;
    pid_ = -1;
  }

  // The owner registers `size` bytes; its addresses and packed rkey.
  void remote_register(size_t size, bool vmm) {
    const Command c{'R', static_cast<uint8_t>(vmm), 0, size};
    ASSERT_TRUE(mc::test::write_all(cmd_fd_, &c, sizeof(c)));
    ASSERT_TRUE(mc::test::read_blob(reply_fd_, &dev_addr_));
    ASSERT_TRUE(mc::test::read_blob(reply_fd_, &iface_addr_));
    ASSERT_TRUE(mc::test::read_blob(reply_fd_, &packed_));
    ASSERT_FALSE(packed_.empty()) << "the owner could not register its memory";
    std::string error;
    Result<std::span<const uint8_t>> payload = rkey_unpack_envelope("cuda_ipc", packed_);
    ASSERT_TRUE(payload.ok());
    Result<CudaIpcKey> key = cuda_ipc_key_unpack(*payload, &error);
    ASSERT_TRUE(key.ok()) << error;
    key_ = *key;
  }

  bool remote_matches(size_t size, uint8_t seed) {
    const Command c{'C', 0, seed, size};
    char ok = 0;
    return mc::test::write_all(cmd_fd_, &c, sizeof(c)) && mc::test::read_all(reply_fd_, &ok, 1) &&
           ok == 'Y';
  }

  void remote_unregister() {
    const Command c{'U', 0, 0, 0};
    char ok = 0;
    ASSERT_TRUE(mc::test::write_all(cmd_fd_, &c, sizeof(c)));
    ASSERT_TRUE(mc::test::read_all(reply_fd_, &ok, 1));
  }

  std::unique_ptr<Endpoint> connect() {
    std::string why;
    EXPECT_TRUE(iface_->is_reachable(dev_addr_, iface_addr_, &why)) << why;
    Result<std::unique_ptr<Endpoint>> ep = iface_->ep_create(dev_addr_, iface_addr_);
    EXPECT_TRUE(ep.ok());
    return ep.ok() ? std::move(*ep) : nullptr;
  }

  Status zcopy(Endpoint& ep, bool put, void* local, size_t n, uint64_t remote, const Rkey& rkey) {
    Iov iov{local, n, nullptr};
    Done d;
    const Status s = put ? ep.put_zcopy(&iov, 1, remote, rkey, &d.comp)
                         : ep.get_zcopy(&iov, 1, remote, rkey, &d.comp);
    if (s != Status::InProgress) return s;
    EXPECT_FALSE(d.fired);
    for (int spins = 0; !d.fired && spins < 1000; ++spins) iface_->progress();
    EXPECT_TRUE(d.fired);
    return d.comp.status;
  }

  // Put `n` bytes from local fake GPU memory, check them in the owner, get
  // them back into other local GPU memory.
  void put_get(Endpoint& ep, const Rkey& rkey, size_t n, uint8_t seed) {
    FakeGpuBuffer src(n), dst(n);
    ASSERT_TRUE(src.ok() && dst.ok());
    const std::vector<uint8_t> data = pattern(n, seed);
    std::memcpy(src.view, data.data(), n);
    ASSERT_EQ(zcopy(ep, true, src.device, n, key_.reg_base, rkey), Status::Ok) << n;
    EXPECT_TRUE(remote_matches(n, seed)) << n << " bytes put";
    ASSERT_EQ(zcopy(ep, false, dst.device, n, key_.reg_base, rkey), Status::Ok) << n;
    EXPECT_EQ(std::memcmp(dst.view, data.data(), n), 0) << n << " bytes got back";
  }

  bool fabric_ = false;
  pid_t pid_ = -1;
  int cmd_fd_ = -1, reply_fd_ = -1;
  std::unique_ptr<CudaIpcMd> md_;
  std::unique_ptr<Iface> iface_;
  std::vector<uint8_t> dev_addr_, iface_addr_, packed_;
  CudaIpcKey key_;
};

TEST_F(CudaIpcTwoProc, LegacyHandlePutAndGetFromEightBytesToOneMebibyte) {
  remote_register(1 << 20, false);
  EXPECT_EQ(key_.kind, IpcHandleKind::Legacy);
  std::unique_ptr<Endpoint> ep = connect();
  ASSERT_TRUE(ep);
  Result<std::unique_ptr<Rkey>> rkey = md_->rkey_unpack(packed_);
  ASSERT_TRUE(rkey.ok());
  uint8_t seed = 1;
  for (size_t n : {size_t{8}, size_t{4096}, size_t{65536}, size_t{1} << 20}) {
    put_get(*ep, **rkey, n, seed++);
  }
}

TEST_F(CudaIpcTwoProc, VmmAllocationIsExportedAsAPosixFdPassedOverTheOwnersSocket) {
  remote_register(1 << 20, true);
  EXPECT_EQ(key_.kind, IpcHandleKind::PosixFd);
  std::unique_ptr<Endpoint> ep = connect();
  ASSERT_TRUE(ep);
  Result<std::unique_ptr<Rkey>> rkey = md_->rkey_unpack(packed_);
  ASSERT_TRUE(rkey.ok());
  put_get(*ep, **rkey, 1 << 20, 42);
}

TEST_F(CudaIpcTwoProc, AnExportIsMappedOnceForEveryRkeyThatNamesIt) {
  remote_register(65536, false);
  Result<std::unique_ptr<Rkey>> a = md_->rkey_unpack(packed_);
  Result<std::unique_ptr<Rkey>> b = md_->rkey_unpack(packed_);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(md_->cache().opens(), 1u);
  EXPECT_EQ(md_->cache().hits(), 1u);
  EXPECT_EQ(static_cast<CudaIpcRkey&>(**a).mapping, static_cast<CudaIpcRkey&>(**b).mapping);
}

TEST_F(CudaIpcTwoProc, UnregisteringInvalidatesThePeersMappingAndRefusesItLater) {
  remote_register(65536, false);
  std::unique_ptr<Endpoint> ep = connect();
  ASSERT_TRUE(ep);
  Result<std::unique_ptr<Rkey>> rkey = md_->rkey_unpack(packed_);
  ASSERT_TRUE(rkey.ok());
  put_get(*ep, **rkey, 4096, 3);
  remote_unregister();  // the notice is in our socket before the owner answers
  iface_->progress();
  EXPECT_EQ(md_->cache().invalidations(), 1u);
  EXPECT_NE(static_cast<CudaIpcRkey&>(**rkey).mapping->stale_reason().find("unregistered"),
            std::string::npos);
  FakeGpuBuffer src(4096);
  ASSERT_TRUE(src.ok());
  EXPECT_EQ(zcopy(*ep, true, src.device, 4096, key_.reg_base, **rkey), Status::InvalidParam);
  // The same packed rkey again: the owner refuses it (stale).
  EXPECT_EQ(md_->rkey_unpack(packed_).status(), Status::InvalidParam);
}

TEST_F(CudaIpcTwoProc, AForgedTokenOrRangeIsRefusedByTheOwner) {
  remote_register(65536, false);
  for (int which = 0; which < 2; ++which) {
    CudaIpcKey forged = key_;
    if (which == 0) {
      forged.token ^= 1;
    } else {
      forged.alloc_length *= 2;  // more than was exported
      forged.reg_length = forged.alloc_length;
    }
    std::vector<uint8_t> payload, packed;
    cuda_ipc_key_pack(forged, &payload);
    rkey_pack_envelope("cuda_ipc", payload, &packed);
    EXPECT_EQ(md_->rkey_unpack(packed).status(), Status::InvalidParam) << which;
  }
  EXPECT_EQ(md_->cache().opens(), 0u) << "nothing was mapped";
  // Bytes that do not decode.
  std::vector<uint8_t> broken = packed_;
  broken.resize(broken.size() - 3);
  EXPECT_EQ(md_->rkey_unpack(broken).status(), Status::InvalidParam);
}

TEST_F(CudaIpcTwoProc, AGoneOwnerInvalidatesItsMappingsAndIsNamed) {
  remote_register(65536, false);
  Result<std::unique_ptr<Rkey>> rkey = md_->rkey_unpack(packed_);
  ASSERT_TRUE(rkey.ok());
  const std::vector<uint8_t> first = packed_;
  remote_register(4096, false);  // a second export, not yet mapped here
  // Killed: it unregisters nothing (a clean exit would, and say so).
  ASSERT_EQ(kill(pid_, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid_, &status, 0), pid_);
  pid_ = -1;
  iface_->progress();  // the owner's socket closed: every mapping of it goes
  EXPECT_NE(static_cast<CudaIpcRkey&>(**rkey).mapping->stale_reason().find("has gone"),
            std::string::npos);
  EXPECT_EQ(md_->rkey_unpack(packed_).status(), Status::Unreachable);
}

TEST_F(CudaIpcTwoProc, ReachesAnotherProcessOnThisHostAndSaysWhyNotItself) {
  remote_register(4096, false);
  std::string why;
  EXPECT_TRUE(iface_->is_reachable(dev_addr_, iface_addr_, &why)) << why;
  EXPECT_FALSE(iface_->is_reachable(iface_->device_address(), iface_->iface_address(), &why));
  EXPECT_NE(why.find("the same process"), std::string::npos) << why;
  std::vector<uint8_t> other_host = dev_addr_;
  other_host[0] ^= 0xff;
  EXPECT_FALSE(iface_->is_reachable(other_host, iface_addr_, &why));
  EXPECT_NE(why.find("another host"), std::string::npos) << why;
  std::vector<uint8_t> no_gpu(dev_addr_.begin(), dev_addr_.begin() + 9);  // host, count
  no_gpu[8] = 0;
  no_gpu.insert(no_gpu.end(), dev_addr_.end() - 21, dev_addr_.end());  // the fabric part
  EXPECT_FALSE(iface_->is_reachable(no_gpu, iface_addr_, &why));
  EXPECT_NE(why.find("no GPU"), std::string::npos) << why;
}

TEST_F(CudaIpcTwoProc, HostMemoryIsNotRegisteredAndFabricSaysWhyNot) {
  std::vector<uint8_t> host(4096);
  EXPECT_EQ(md_->mem_reg(host.data(), host.size(), kAccessAll).status(), Status::InvalidParam);
  const MdAttr a = md_->query();
  ASSERT_FALSE(a.notes.empty());
  EXPECT_NE(a.notes[0].find("fabric handles (MNNVL): unavailable: "), std::string::npos)
      << a.notes[0];
}

// Fabric handles (MNNVL) where the driver, the device, NVML and the IMEX
// channel allow them: a VMM allocation goes as a fabric handle, and a peer
// of another host in the same NVLink domain is reachable.
class CudaIpcFabric : public CudaIpcTwoProc {
 protected:
  bool fabric() const override { return true; }
};

TEST_F(CudaIpcFabric, AVmmAllocationIsExportedAsAFabricHandle) {
  const MdAttr a = md_->query();
  ASSERT_FALSE(a.notes.empty());
  EXPECT_NE(a.notes[0].find("fabric handles (MNNVL): available, NVLink domain: cluster "
                            "66616b652d6e766c2d646f6d61696e21 clique 7"),
            std::string::npos)
      << a.notes[0];
  remote_register(1 << 20, true);
  EXPECT_EQ(key_.kind, IpcHandleKind::Fabric);
  std::unique_ptr<Endpoint> ep = connect();
  ASSERT_TRUE(ep);
  Result<std::unique_ptr<Rkey>> rkey = md_->rkey_unpack(packed_);
  ASSERT_TRUE(rkey.ok());
  put_get(*ep, **rkey, 1 << 20, 77);
}

TEST_F(CudaIpcFabric, AnotherHostIsReachableInTheSameNvlinkDomainOnly) {
  remote_register(4096, false);
  std::vector<uint8_t> other_host = dev_addr_;
  other_host[0] ^= 0xff;
  std::string why;
  EXPECT_TRUE(iface_->is_reachable(other_host, iface_addr_, &why)) << why;
  other_host[other_host.size() - 4] ^= 1;  // another clique id
  EXPECT_FALSE(iface_->is_reachable(other_host, iface_addr_, &why));
  EXPECT_NE(why.find("another host in another NVLink domain"), std::string::npos) << why;
  // A legacy handle of another host is refused at unpack, naming why.
  CudaIpcKey k = key_;
  k.owner_host ^= 1;
  std::vector<uint8_t> payload, packed;
  cuda_ipc_key_pack(k, &payload);
  rkey_pack_envelope("cuda_ipc", payload, &packed);
  EXPECT_EQ(md_->rkey_unpack(packed).status(), Status::Unreachable);
}

TEST(CudaIpcFabricForced, WithoutFabricHandlesAForcedRegistrationFailsNamingWhy) {
  ASSERT_TRUE(FakeCuda::get().ok());
  const CuDriver* driver = fake_driver();
  ASSERT_TRUE(driver);
  CudaIpcConfig config = test_config();
  config.fabric = FabricMode::Yes;  // what MC_FORCE_MNNVL sets
  Result<std::unique_ptr<CudaIpcMd>> md = CudaIpcMd::create(driver, config);
  ASSERT_TRUE(md.ok());
  EXPECT_NE((*md)->fabric_unavailable().find("GPU 0 does not support fabric handles"),
            std::string::npos)
      << (*md)->fabric_unavailable();
  FakeGpuBuffer vmm(1 << 16, true);
  ASSERT_TRUE(vmm.ok());
  EXPECT_EQ((*md)->mem_reg(vmm.device, vmm.size, kAccessAll).status(), Status::Unsupported);
}

}  // namespace
}  // namespace mc::uct::cuda::ipc_test
