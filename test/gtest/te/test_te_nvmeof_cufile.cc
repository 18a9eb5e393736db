// SPDX-License-Identifier: Apache-2.0
// File (nvmeof) segments and GPU memory through cuFile (GPUDirect Storage):
// with MC_NVMEOF_CUFILE_LIB naming the fake cuFile library
// (uct/nvmeof/fake_cufile.cc: pread/pwrite over the fake GPU memory of
// ucp/fake_gpu.h, counting its calls), a TE WRITE and READ between "VRAM"
// and a segment of two files move through cuFile and not the bounce buffers
// (the fake GPU's copy count stays put), aligned and not, across the files'
// boundary; each file is registered with cuFile once; a cuFile error ends
// the task FAILED with its text in the log; a request past the end is
// INVALID and reaches neither cuFile nor the file. With MC_NVMEOF_CUFILE=off
// or no library, the bounce buffers still carry the data and the memory
// domain says why cuFile is not used; with =on and no library, GPU tasks fail
// instead of being staged. Never run against real GDS.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstring>
#include <memory>

#include "common/log_capture.h"
#include "te/nvmeof_vram_fixture.h"
#include "ucs/log/log.h"
#include "uct/api/md.h"

namespace mc::te::test {
namespace {

namespace nt = mc::uct::nvmeof::test;
using mc::test::LogCapture;
using ucp::test::fake_gpu_component;
using ucp::test::fake_gpu_state;
using ucp::test::FakeGpuState;

constexpr size_t kLen0 = 40960 + 333;  // unaligned: so is the boundary
constexpr size_t kLen1 = 49152;
constexpr size_t kTotal = kLen0 + kLen1;
constexpr uint64_t kSeed0 = 21, kSeed1 = 22;

// fake_cufile.cc's counters, reached by dlsym on the library nvmeof loads.
struct FakeCufileStats {
  long driver_open, driver_close, handle_register, handle_deregister, reads, writes;
  long read_bytes, write_bytes;
  long handles;
};

class FakeCufile {
 public:
  static std::string path() { return MC_TEST_MODULE_DIR "/libmc_test_fakecufile.so"; }
  static FakeCufile& get() {
    static FakeCufile f;
    return f;
  }
  bool ok() const { return stats && reset && fail; }
  FakeCufileStats (*stats)() = nullptr;
  void (*reset)() = nullptr;
  void (*fail)(long at, long ret) = nullptr;

 private:
  FakeCufile() {
    void* lib = dlopen(path().c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) return;
    stats = reinterpret_cast<decltype(stats)>(dlsym(lib, "mc_fake_cufile_stats"));
    reset = reinterpret_cast<decltype(reset)>(dlsym(lib, "mc_fake_cufile_reset"));
    fail = reinterpret_cast<decltype(fail)>(dlsym(lib, "mc_fake_cufile_fail"));
  }
};

class TeNvmeofCufile : public NvmeofVramFixture {
 protected:
  TeNvmeofCufile() : NvmeofVramFixture({"gds-seg", kLen0, kLen1, kSeed0, kSeed1}) {}

  void SetUp() override {
    if (uct::find_component("nvmeof") == nullptr) GTEST_SKIP() << "nvmeof not built (liburing)";
    ASSERT_TRUE(FakeCufile::get().ok()) << FakeCufile::path() << ": " << dlerror();
    FakeCufile::get().reset();
    NvmeofVramFixture::SetUp();
  }

  // The engine's environment: the fake GPU's copy transport (the bounce
  // path) and `cufile` (MC_NVMEOF_CUFILE), `lib` (MC_NVMEOF_CUFILE_LIB).
  std::map<std::string, std::string> env(const std::string& cufile, const std::string& lib) {
    return {{"MC_TLS", std::string("tcp,") + ucp::test::kFakeGpuTl},
            {"MC_NET_DEVICES", "lo"},
            {"MC_TRANSFER_TIMEOUT", "30s"},
            {"MC_METADATA_TIMEOUT", "3s"},
            {"MC_RNDV_FRAG_SIZE", "host:512k,cuda:16k"},
            {"MC_LOG_LEVEL", "warn"},
            {"MC_NVMEOF_CUFILE", cufile},
            {"MC_NVMEOF_CUFILE_LIB", lib}};
  }

  // An engine with the segment open (the nvmeof md is opened then, with
  // `vars`) and the VRAM registered as cuda:0.
  void open_engine(const std::map<std::string, std::string>& vars) {
    NvmeofVramFixture::open_engine({fake_gpu_component()}, vars);
  }

  // The nvmeof md's notes (mc_info -d's lines) under `vars`.
  static std::string md_notes(const std::map<std::string, std::string>& vars) {
    ScopedEnv scoped(vars);
    ucs::Result<ucs::config::Sources> sources = ucs::config::Sources::from_process();
    if (!sources.ok()) return "no sources";
    ucs::Result<std::unique_ptr<uct::MemoryDomain>> md =
        uct::find_component("nvmeof")->md_open("nvmeof", *sources);
    if (!md.ok()) return "md_open failed";
    std::string out;
    for (const std::string& n : (*md)->query().notes) out += n + "\n";
    return out;
  }

  // A WRITE of a pattern from VRAM + `local` to `offset`, the files checked
  // with read(), then a READ back into cleared VRAM.
  void write_read(uint64_t offset, size_t length, size_t local, std::vector<uint8_t>* want) {
    const std::vector<uint8_t> v = nt::pattern_bytes(offset * 7 + length, offset, length);
    std::memcpy(vram() + local, v.data(), length);
    TransferStatus st = run(TransferRequest::WRITE, vram() + local, offset, length);
    ASSERT_EQ(st.s, COMPLETED);
    EXPECT_EQ(st.transferred, length);
    std::copy(v.begin(), v.end(), want->begin() + static_cast<ptrdiff_t>(offset));
    const std::vector<uint8_t> got = files();
    ASSERT_EQ(got.size(), kTotal) << "the files' sizes changed";
    for (size_t i = 0; i < kTotal; ++i) ASSERT_EQ(got[i], (*want)[i]) << "segment byte " << i;
    std::memset(vram(), 0, vram_->length());
    st = run(TransferRequest::READ, vram() + local, offset, length);
    ASSERT_EQ(st.s, COMPLETED);
    EXPECT_EQ(std::memcmp(vram() + local, v.data(), length), 0);
    if (local > 0) {
      EXPECT_EQ(vram()[local - 1], 0) << "wrote before";
    }
    EXPECT_EQ(vram()[local + length], 0) << "wrote past";
  }

};

TEST_F(TeNvmeofCufile, WriteAndReadThroughCufile) {
  ASSERT_NO_FATAL_FAILURE(open_engine(env("auto", FakeCufile::path())));
  EXPECT_NE(md_notes(env("auto", FakeCufile::path()))
                .find("cuFile: " + FakeCufile::path() + " loaded, driver open"),
            std::string::npos);
  std::vector<uint8_t> want = initial_segment();
  struct Case {
    uint64_t offset;
    size_t length;
    size_t local;
  };
  const Case cases[] = {
      {0, 8192, 0},                 // aligned
      {4097, 10000, 3},             // unaligned
      {kLen0 - 5000, 20000, 7},     // across the files' boundary
      {kTotal - 4096, 4096, 4096},  // the last bytes of the segment
  };
  for (const Case& c : cases) {
    SCOPED_TRACE("offset " + std::to_string(c.offset) + ", " + std::to_string(c.length) + " bytes");
    const FakeCufileStats before = FakeCufile::get().stats();
    ASSERT_NO_FATAL_FAILURE(write_read(c.offset, c.length, c.local, &want));
    const FakeCufileStats after = FakeCufile::get().stats();
    EXPECT_EQ(after.write_bytes - before.write_bytes, static_cast<long>(c.length));
    EXPECT_EQ(after.read_bytes - before.read_bytes, static_cast<long>(c.length));
  }
  EXPECT_EQ(fake_gpu_state().copies, 0u) << "no bounce buffer was used";
  const FakeCufileStats s = FakeCufile::get().stats();
  EXPECT_EQ(s.handle_register, 2) << "each file registered with cuFile once";
  EXPECT_EQ(s.driver_open, 1);
  // Past the end: INVALID, and neither cuFile nor the file is touched.
  EXPECT_EQ(run(TransferRequest::WRITE, vram(), kTotal - 10, 20).s, INVALID);
  EXPECT_EQ(run(TransferRequest::READ, vram(), kTotal, 1).s, INVALID);
  EXPECT_EQ(FakeCufile::get().stats().writes, s.writes);
  EXPECT_EQ(FakeCufile::get().stats().reads, s.reads);
  EXPECT_EQ(nt::file_size(f1_), kLen1) << "nothing is written past the end";
  EXPECT_EQ(files(), want);
  EXPECT_EQ(engine_->closeSegment(seg_), 0);
  engine_.reset();
  EXPECT_EQ(FakeCufile::get().stats().handles, 0) << "file handles deregistered";
  EXPECT_EQ(FakeCufile::get().stats().driver_close, 1) << "driver closed with the last md";
}

TEST_F(TeNvmeofCufile, CufileErrorFailsTheTaskWithItsText) {
  ASSERT_NO_FATAL_FAILURE(open_engine(env("on", FakeCufile::path())));
  const std::vector<uint8_t> want = initial_segment();
  std::memset(vram(), 0xab, 8192);
  {
    LogCapture log(google::GLOG_ERROR);
    FakeCufile::get().fail(1, -5008);  // CU_FILE_IO_NOT_SUPPORTED
    EXPECT_EQ(run(TransferRequest::WRITE, vram(), 100, 8192).s, FAILED);
    EXPECT_NE(log.text().find("cuFileWrite"), std::string::npos) << log.text();
    EXPECT_NE(log.text().find("CU_FILE_IO_NOT_SUPPORTED (5008)"), std::string::npos) << log.text();
  }
  {
    LogCapture log(google::GLOG_ERROR);
    FakeCufile::get().fail(1, -1);  // errno EIO
    EXPECT_EQ(run(TransferRequest::READ, vram(), 100, 8192).s, FAILED);
    EXPECT_NE(log.text().find(ucs::errno_string(EIO)), std::string::npos) << log.text();
  }
  EXPECT_EQ(files(), want) << "the failed write wrote nothing";
  // A failure is not sticky.
  std::vector<uint8_t> now = want;
  ASSERT_NO_FATAL_FAILURE(write_read(100, 8192, 0, &now));
  EXPECT_EQ(fake_gpu_state().copies, 0u);
  EXPECT_EQ(engine_->closeSegment(seg_), 0);
}

// Without cuFile the bounce buffers carry the data, and the md (mc_info -d)
// and the log say why.
TEST_F(TeNvmeofCufile, OffOrMissingLibraryUsesBounceBuffers) {
  const struct {
    std::string cufile, lib, why;
  } cases[] = {{"off", FakeCufile::path(), "cuFile: not used (off by MC_NVMEOF_CUFILE)"},
               {"auto", "/nonexistent/libcufile.so.0",
                "cuFile: not used (/nonexistent/libcufile.so.0: cannot open shared object file"}};
  for (const auto& c : cases) {
    SCOPED_TRACE("MC_NVMEOF_CUFILE=" + c.cufile + " MC_NVMEOF_CUFILE_LIB=" + c.lib);
    EXPECT_NE(md_notes(env(c.cufile, c.lib)).find(c.why), std::string::npos)
        << md_notes(env(c.cufile, c.lib));
    {
      LogCapture log(google::GLOG_INFO);
      const ucs::LogLevel level = ucs::log_level();
      ucs::log_set_level(ucs::LogLevel::Info);
      open_engine(env(c.cufile, c.lib));
      ucs::log_set_level(level);
      ASSERT_FALSE(HasFatalFailure());
      EXPECT_NE(log.text().find(c.why.substr(std::strlen("cuFile: "))), std::string::npos)
          << log.text();
    }
    std::vector<uint8_t> want = initial_segment();
    fake_gpu_state() = FakeGpuState{};
    ASSERT_NO_FATAL_FAILURE(write_read(4097, 20000, 3, &want));
    EXPECT_GT(fake_gpu_state().copies, 0u) << "staged through the bounce buffers";
    EXPECT_EQ(FakeCufile::get().stats().reads + FakeCufile::get().stats().writes, 0);
    EXPECT_EQ(engine_->closeSegment(seg_), 0);
    engine_.reset();
    ASSERT_TRUE(nt::write_pattern_file(f0_, kLen0, kSeed0));
    ASSERT_TRUE(nt::write_pattern_file(f1_, kLen1, kSeed1));
  }
}

TEST_F(TeNvmeofCufile, OnWithoutLibraryFailsInsteadOfStaging) {
  ASSERT_NO_FATAL_FAILURE(open_engine(env("on", "/nonexistent/libcufile.so.0")));
  LogCapture log(google::GLOG_ERROR);
  EXPECT_EQ(run(TransferRequest::WRITE, vram(), 0, 4096).s, FAILED);
  EXPECT_NE(log.text().find("cuFile not used (/nonexistent/libcufile.so.0"), std::string::npos)
      << log.text();
  EXPECT_EQ(fake_gpu_state().copies, 0u) << "not staged";
  EXPECT_EQ(files(), initial_segment());
  EXPECT_EQ(engine_->closeSegment(seg_), 0);
}

}  // namespace
}  // namespace mc::te::test
