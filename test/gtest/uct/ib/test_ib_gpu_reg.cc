// SPDX-License-Identifier: Apache-2.0
// The ib memory domain's GPU registration on the soft provider with the
// fake CUDA driver (fake_cuda.cc): which path MC_IB_GPU_REG and what the
// machine offers choose, and why none; a dma-buf registration that leaves
// no fd open; the driver's errors named; the peer-memory fallback.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <string>

#include "common/proc_counts.h"
#include "ucs/config/table.h"
#include "uct/ib/base/ib_md.h"
#include "uct/ib/fake_gpu.h"
#include "uct/ib/soft/soft_fabric.h"
#include "uct/ib/soft_verbs_fixture.h"

namespace mc::uct::ib::soft {
namespace {

using test::FakeCuda;
using test::FakeGpuBuffer;
using ucs::Result;
using ucs::Status;

constexpr int kNotSupported = 801;  // CUDA_ERROR_NOT_SUPPORTED

class GpuMd : public IbMd {
 public:
  using IbMd::IbMd;
  const char* tl_name() const override { return "rc_verbs"; }
  Result<std::unique_ptr<Iface>> iface_open(const IfaceParams&) override {
    return Status::Unsupported;
  }
};

class IbMdGpu : public SoftVerbsFixture {
 protected:
  void SetUp() override {
    SoftVerbsFixture::SetUp();
    ASSERT_TRUE(FakeCuda::get().ok()) << FakeCuda::path() << ": " << dlerror();
    page_ = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    modules_ =
        std::filesystem::temp_directory_path() / ("mc-gtest-sysmodule-" + std::to_string(getpid()));
    std::filesystem::create_directories(modules_);
  }
  void TearDown() override {
    FakeCuda::get().fail_handle(0);
    std::filesystem::remove_all(modules_);
    SoftVerbsFixture::TearDown();
  }
  /// The md with the fake driver, no peer-memory module loaded, and `knobs`
  /// on top; `ops`: another verbs table than the soft one.
  std::unique_ptr<GpuMd> open_md(std::map<std::string, std::string> knobs = {},
                                 const VerbsOps* ops = nullptr) {
    std::map<std::string, std::string> env = {{"MC_IB_PROVIDER", "soft"},
                                              {"MC_IB_SOFT_FABRIC", fabric_},
                                              {"MC_IB_SOFT_DEVICES", "2"},
                                              {"MC_IB_CUDA_DRIVER", FakeCuda::path()},
                                              {"MC_IB_SYS_MODULE", modules_.string()}};
    for (auto& [k, v] : knobs) env[k] = v;
    Result<ucs::config::Sources> src = ucs::config::Sources::from(env, {});
    EXPECT_TRUE(src.ok());
    if (!src.ok()) return nullptr;
    Result<IbConfig> cfg = ucs::config::read_table<IbConfig>(ib_config_table(), *src);
    EXPECT_TRUE(cfg.ok());
    if (!cfg.ok()) return nullptr;
    return std::make_unique<GpuMd>("rc_verbs", ops ? ops : v_, *cfg, "");
  }
  void load_peermem() { std::filesystem::create_directories(modules_ / "nvidia_peermem"); }
  static bool registers_cuda(const IbMd& md) {
    return md.query().reg_mem_types & mem_type_bit(MemType::Cuda);
  }
  static std::string note(const IbMd& md) {
    const MdAttr a = md.query();
    return a.notes.empty() ? "" : a.notes[0];
  }
  /// The soft provider's record of `mr`.
  MrSlot slot(uint32_t key) {
    Result<Fabric*> f = Fabric::open(fabric_);
    if (!f.ok()) return {};
    Fabric::Guard g(*f);
    const MrSlot* m = (*f)->mr_find(key);
    return m ? *m : MrSlot{};
  }

  size_t page_ = 4096;
  std::filesystem::path modules_;
};

TEST_F(IbMdGpu, WithoutADriverOnlyHostMemoryIsRegisteredAndTheNoteSaysWhy) {
  std::unique_ptr<GpuMd> md = open_md({{"MC_IB_CUDA_DRIVER", "/nonexistent/libcuda.so.1"}});
  ASSERT_TRUE(md);
  EXPECT_FALSE(registers_cuda(*md));
  EXPECT_EQ(md->gpu_reg().path(), IbGpuReg::Path::None);
  EXPECT_EQ(
      note(*md).rfind("GPU memory registration: none (/nonexistent/libcuda.so.1 not found: ", 0),
      0u)
      << note(*md);
  std::vector<uint8_t> host(100);
  Result<std::unique_ptr<MemHandle>> h = md->mem_reg(host.data(), host.size(), kAccessAll);
  ASSERT_TRUE(h.ok());
  EXPECT_EQ((*h)->mem_type(), MemType::Host);
}

TEST_F(IbMdGpu, DmaBufRegistrationMapsTheAllocationsPagesAndClosesTheFd) {
  std::unique_ptr<GpuMd> md = open_md();
  ASSERT_TRUE(md);
  ASSERT_EQ(md->gpu_reg().path(), IbGpuReg::Path::DmaBuf) << note(*md);
  EXPECT_TRUE(registers_cuda(*md));
  EXPECT_NE(note(*md).find("dma-buf"), std::string::npos) << note(*md);
  FakeGpuBuffer gpu(4 * page_);
  ASSERT_TRUE(gpu.ok());
  const size_t fds = mc::test::proc_counts().fds;
  // A range that starts and ends inside pages: the offset in the dma-buf
  // is the range's own.
  const size_t off = page_ + 100, len = 2 * page_;
  Result<std::unique_ptr<MemHandle>> h =
      md->mem_reg(reinterpret_cast<void*>(gpu.address(off)), len, kAccessAll);
  ASSERT_TRUE(h.ok());
  EXPECT_EQ((*h)->mem_type(), MemType::Cuda);
  EXPECT_EQ(mc::test::proc_counts().fds, fds) << "the dma-buf fd was left open";
  const auto& memh = static_cast<const IbMemHandle&>(**h);
  ASSERT_EQ(memh.region().mrs.size(), 2u);
  for (ibv_mr* mr : memh.region().mrs) {
    // Named by the GPU address, its bytes in the provider's mapping of the dma-buf.
    EXPECT_EQ(reinterpret_cast<uintptr_t>(mr->addr), gpu.address(off));
    const MrSlot s = slot(mr->rkey);
    EXPECT_EQ(s.addr, gpu.address(off));
    EXPECT_EQ(s.length, len);
    ASSERT_NE(s.base, s.addr);
    gpu.view[off] = 0x5a;
    EXPECT_EQ(*reinterpret_cast<const uint8_t*>(s.base), 0x5a);
  }
  std::vector<uint8_t> packed;
  EXPECT_EQ(md->mkey_pack(**h, &packed), Status::Ok);
  // A piece for local use shares the region; a GPU range leaving its
  // allocation is refused.
  Result<std::unique_ptr<MemHandle>> piece =
      md->mem_reg(reinterpret_cast<void*>(gpu.address(off + 8)), 64, kAccessLocal);
  ASSERT_TRUE(piece.ok());
  EXPECT_EQ(&static_cast<const IbMemHandle&>(**piece).region(), &memh.region());
  EXPECT_EQ(
      md->mem_reg(reinterpret_cast<void*>(gpu.address(3 * page_)), 2 * page_, kAccessAll).status(),
      Status::InvalidParam);
  h = Status::NoElem;
  piece = Status::NoElem;
  EXPECT_EQ(mc::test::proc_counts().fds, fds);
}

TEST_F(IbMdGpu, DriverErrorIsNamedWithTheCallAndRegistersNothing) {
  std::unique_ptr<GpuMd> md = open_md({{"MC_IB_GPU_REG", "dmabuf"}});
  ASSERT_TRUE(md);
  ASSERT_EQ(md->gpu_reg().path(), IbGpuReg::Path::DmaBuf) << note(*md);
  FakeGpuBuffer gpu(2 * page_);
  ASSERT_TRUE(gpu.ok());
  FakeCuda::get().fail_handle(kNotSupported);
  std::string error;
  Result<DmaBuf> buf = md->gpu_reg().export_dmabuf(gpu.address(), page_, &error);
  EXPECT_EQ(buf.status(), Status::IoError);
  EXPECT_NE(error.find("cuMemGetHandleForAddressRange"), std::string::npos) << error;
  EXPECT_NE(error.find("CUDA_ERROR_NOT_SUPPORTED"), std::string::npos) << error;
  EXPECT_EQ(md->mem_reg(gpu.device, page_, kAccessAll).status(), Status::IoError);
}

TEST_F(IbMdGpu, AutoFallsBackToPeerMemoryForARangeWithoutDmaBuf) {
  if (!IbGpuReg::peermem_built()) GTEST_SKIP() << "built with --without-nvidia-peermem";
  load_peermem();
  std::unique_ptr<GpuMd> md = open_md();
  ASSERT_TRUE(md);
  ASSERT_EQ(md->gpu_reg().path(), IbGpuReg::Path::DmaBuf) << note(*md);
  EXPECT_TRUE(md->gpu_reg().peermem_fallback());
  FakeGpuBuffer gpu(2 * page_);
  ASSERT_TRUE(gpu.ok());
  FakeCuda::get().fail_handle(kNotSupported);
  Result<std::unique_ptr<MemHandle>> h = md->mem_reg(gpu.device, page_, kAccessAll);
  ASSERT_TRUE(h.ok());
  EXPECT_EQ((*h)->mem_type(), MemType::Cuda);
  // Plain ibv_reg_mr: the provider's record names the GPU address itself.
  const MrSlot s = slot(static_cast<const IbMemHandle&>(**h).region().mrs[0]->rkey);
  EXPECT_EQ(s.base, s.addr);
}

TEST_F(IbMdGpu, WithoutDmaBufVerbsThePeerMemoryModuleDecides) {
  if (!IbGpuReg::peermem_built()) GTEST_SKIP() << "built with --without-nvidia-peermem";
  VerbsOps no_dmabuf = *v_;
  no_dmabuf.reg_dmabuf_mr = nullptr;
  {
    std::unique_ptr<GpuMd> md = open_md({}, &no_dmabuf);
    ASSERT_TRUE(md);
    EXPECT_EQ(md->gpu_reg().path(), IbGpuReg::Path::None);
    EXPECT_FALSE(registers_cuda(*md));
    const std::string n = note(*md);
    EXPECT_NE(n.find("no ibv_reg_dmabuf_mr"), std::string::npos) << n;
    EXPECT_NE(n.find("neither nvidia_peermem nor nv_peer_mem is loaded"), std::string::npos) << n;
    // GPU memory is refused, not pinned as host memory.
    FakeGpuBuffer gpu(page_);
    ASSERT_TRUE(gpu.ok());
    EXPECT_EQ(md->mem_reg(gpu.device, page_, kAccessAll).status(), Status::Unsupported);
  }
  load_peermem();
  std::unique_ptr<GpuMd> md = open_md({}, &no_dmabuf);
  ASSERT_TRUE(md);
  EXPECT_EQ(md->gpu_reg().path(), IbGpuReg::Path::PeerMem) << note(*md);
  EXPECT_TRUE(registers_cuda(*md));
  FakeGpuBuffer gpu(page_);
  ASSERT_TRUE(gpu.ok());
  Result<std::unique_ptr<MemHandle>> h = md->mem_reg(gpu.device, page_, kAccessAll);
  ASSERT_TRUE(h.ok());
  EXPECT_EQ((*h)->mem_type(), MemType::Cuda);
  // Asked for dma-buf only, it has none.
  std::unique_ptr<GpuMd> dmabuf = open_md({{"MC_IB_GPU_REG", "dmabuf"}}, &no_dmabuf);
  ASSERT_TRUE(dmabuf);
  EXPECT_EQ(dmabuf->gpu_reg().path(), IbGpuReg::Path::None);
  EXPECT_NE(note(*dmabuf).find("no dma-buf: "), std::string::npos) << note(*dmabuf);
}

TEST_F(IbMdGpu, KnobChoosesThePathOrNone) {
  if (!IbGpuReg::peermem_built()) GTEST_SKIP() << "built with --without-nvidia-peermem";
  load_peermem();
  std::unique_ptr<GpuMd> off = open_md({{"MC_IB_GPU_REG", "off"}});
  ASSERT_TRUE(off);
  EXPECT_EQ(off->gpu_reg().path(), IbGpuReg::Path::None);
  EXPECT_FALSE(registers_cuda(*off));
  EXPECT_EQ(note(*off), "GPU memory registration: none (MC_IB_GPU_REG=off)");
  std::unique_ptr<GpuMd> peermem = open_md({{"MC_IB_GPU_REG", "peermem"}});
  ASSERT_TRUE(peermem);
  EXPECT_EQ(peermem->gpu_reg().path(), IbGpuReg::Path::PeerMem);
  EXPECT_FALSE(peermem->gpu_reg().peermem_fallback());
  std::unique_ptr<GpuMd> dmabuf = open_md({{"MC_IB_GPU_REG", "dmabuf"}});
  ASSERT_TRUE(dmabuf);
  EXPECT_EQ(dmabuf->gpu_reg().path(), IbGpuReg::Path::DmaBuf);
  EXPECT_FALSE(dmabuf->gpu_reg().peermem_fallback());
}

}  // namespace
}  // namespace mc::uct::ib::soft
