// SPDX-License-Identifier: Apache-2.0
// UCP over rc_verbs and rc_mlx5 into GPU memory: a fake GPU allocation (the
// fake CUDA driver of test/gtest/uct/ib/fake_cuda.cc) mapped by
// MemHandle::map is registered by the ib md through dma-buf, and a peer's
// put and get reach its pages, on the soft provider's two devices.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "ucp/api/ucp.h"
#include "ucp/ucp_test_util.h"
#include "uct/base/component_loader.h"
#include "uct/ib/fake_gpu.h"
#include "uct/uct_test.h"

namespace mc::ucp::test {
namespace {

using ucs::Result;
using ucs::Status;
using uct::test::FakeCuda;
using uct::test::FakeGpuBuffer;

class UcpRdmaGpu : public testing::TestWithParam<std::string>, protected UcpPair {
 protected:
  void SetUp() override {
    uct::test::use_soft_verbs_unless_told();
    const char* provider = std::getenv("MC_IB_PROVIDER");
    if (!provider || std::string(provider) != "soft") {
      GTEST_SKIP() << "needs the soft provider's dma-buf registration (MC_IB_PROVIDER=soft)";
    }
    if (!uct::find_component(GetParam())) GTEST_SKIP() << GetParam() << " is not loaded";
    ASSERT_TRUE(FakeCuda::get().ok()) << FakeCuda::path();
    ctx_ = make_context({{"MC_TLS", GetParam()},
                         {"MC_IB_PROVIDER", provider},
                         {"MC_IB_SOFT_FABRIC", std::getenv("MC_IB_SOFT_FABRIC")},
                         {"MC_IB_CUDA_DRIVER", FakeCuda::path()},
                         {"MC_IB_GPU_REG", "dmabuf"},
                         {"MC_TRANSFER_TIMEOUT", "60s"},
                         {"MC_LANE_RECONNECT_INTERVAL", "off"}},
                        &sources_);
    ASSERT_NO_FATAL_FAILURE(open_workers());
  }
  void TearDown() override { close_pair(); }
};

TEST_P(UcpRdmaGpu, PutAndGetReachGpuMemoryRegisteredThroughDmaBuf) {
  const size_t n = size_t{1} << 20;
  FakeGpuBuffer gpu(n);
  ASSERT_TRUE(gpu.ok());
  std::memset(gpu.view, 0, n);
  Result<std::unique_ptr<MemHandle>> tmh = MemHandle::map(*ctx_, gpu.device, n);
  ASSERT_TRUE(tmh.ok());
  size_t cuda_handles = 0;
  for (size_t i = 0; i < ctx_->mds().size(); ++i) {
    const uct::MemHandle* h = (*tmh)->uct_memh(i);
    cuda_handles += h && h->mem_type() == uct::MemType::Cuda;
  }
  EXPECT_GE(cuda_handles, 1u) << "no ib md registered it as GPU memory";
  std::vector<uint8_t> src(n), back(n);
  for (size_t i = 0; i < n; ++i) src[i] = static_cast<uint8_t>(i * 29 + (i >> 10) + 1);
  auto smh = MemHandle::map(*ctx_, src.data(), n);
  auto bmh = MemHandle::map(*ctx_, back.data(), n);
  ASSERT_TRUE(smh.ok() && bmh.ok());
  auto rkey = ep_->rkey_unpack(*(*tmh)->rkey_pack());
  ASSERT_TRUE(rkey.ok());
  for (size_t size : {size_t{8}, size_t{4096}, size_t{65536}, n}) {
    SCOPED_TRACE(std::to_string(size) + " bytes");
    std::memset(gpu.view, 0, n);
    RequestParams rp;
    rp.memh = smh->get();
    ASSERT_EQ(wait(ep_->put_nbx(src.data(), size, gpu.address(), **rkey, rp)), Status::Ok);
    ASSERT_EQ(wait(ep_->flush()), Status::Ok);
    EXPECT_EQ(std::memcmp(gpu.view, src.data(), size), 0);
    if (size < n) {
      EXPECT_EQ(gpu.view[size], 0);
    }
    for (size_t i = 0; i < size; ++i) gpu.view[i] = static_cast<uint8_t>(~src[i]);
    std::fill(back.begin(), back.end(), 0);
    rp.memh = bmh->get();
    ASSERT_EQ(wait(ep_->get_nbx(back.data(), size, gpu.address(), **rkey, rp)), Status::Ok);
    EXPECT_EQ(std::memcmp(back.data(), gpu.view, size), 0);
  }
}

INSTANTIATE_TEST_SUITE_P(Rc, UcpRdmaGpu, testing::Values("rc_verbs", "rc_mlx5"),
                         [](const testing::TestParamInfo<std::string>& i) { return i.param; });

}  // namespace
}  // namespace mc::ucp::test
