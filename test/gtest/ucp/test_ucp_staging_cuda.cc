// SPDX-License-Identifier: Apache-2.0
// UCP's staging protocol on a real GPU: cudaMalloc'd memory put to and got
// from a host buffer of another worker over tcp and sm, through cuda_copy
// and pinned bounce buffers, at sizes around MC_RNDV_FRAG_SIZE. Built where
// CUDA is found; skipped, with the reason, without a GPU (test/gpu/run.sh
// runs it on one). The same cases run everywhere on the fake GPU
// (test_ucp_staging.cc); CudaStagingRemote: a peer's cudaMalloc'd memory by
// remote staging (test_ucp_remote_staging.cc on the fake GPU).
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstring>
#include <sstream>

#include "common/gpu_util.h"
#include "ucp/api/ucp.h"
#include "ucp/ucp_test_util.h"
#include "uct/base/component_loader.h"

namespace mc::ucp::test {
namespace {

using ucs::Result;
using ucs::Status;

constexpr size_t kFrag = 256 << 10;
constexpr size_t kMax = 4 << 20;

class CudaStaging : public testing::TestWithParam<std::string>, protected UcpPair {
 protected:
  void SetUp() override {
    if (const std::string why = mc::test::no_gpu_reason(); !why.empty()) GTEST_SKIP() << why;
    if (!uct::find_component(GetParam())) GTEST_SKIP() << GetParam() << " is not available";
    ctx_ = make_context({{"MC_TLS", GetParam() + ",cuda_copy"},
                         {"MC_NET_DEVICES", "lo"},
                         {"MC_TRANSFER_TIMEOUT", "30s"},
                         {"MC_RNDV_FRAG_SIZE", "cuda:256k"}},
                        &sources_);
    ASSERT_NO_FATAL_FAILURE(open_workers());
    remote_.assign(kMax, 0);
    ASSERT_NO_FATAL_FAILURE(map_remote(remote_, &remote_mh_, &rkey_));
    ASSERT_EQ(cudaMalloc(&vram_, kMax), cudaSuccess);
  }

  void TearDown() override {
    rkey_.reset();
    ep_.reset();
    remote_mh_.reset();
    close_pair();
    if (vram_) (void)cudaFree(vram_);
  }

  std::vector<uint8_t> remote_;
  std::unique_ptr<MemHandle> remote_mh_;
  std::unique_ptr<Rkey> rkey_;
  void* vram_ = nullptr;
};

TEST_P(CudaStaging, PutThenGetEverySize) {
  std::ostringstream os;
  ep_->print(os);
  ASSERT_NE(os.str().find("put staged via cuda_copy"), std::string::npos) << os.str();
  const uint64_t raddr = reinterpret_cast<uintptr_t>(remote_.data());
  std::vector<uint8_t> host(kMax);
  for (size_t n : {size_t{1}, kFrag - 1, kFrag, kFrag + 1, 3 * kFrag + 123, kMax}) {
    SCOPED_TRACE("size " + std::to_string(n));
    for (size_t i = 0; i < n; ++i) host[i] = pattern(n, i);
    ASSERT_EQ(cudaMemcpy(vram_, host.data(), n, cudaMemcpyHostToDevice), cudaSuccess);
    std::memset(remote_.data(), 0, kMax);
    RequestParams params;
    params.mem_type = uct::MemType::Unknown;  // cuda_copy's md detects it
    ASSERT_EQ(wait(ep_->put_nbx(vram_, n, raddr, *rkey_, params)), Status::Ok);
    ASSERT_EQ(wait(ep_->flush()), Status::Ok);
    EXPECT_EQ(std::memcmp(remote_.data(), host.data(), n), 0);
    for (size_t i = 0; i < n; ++i) remote_[i] = pattern(n + 1, i);
    ASSERT_EQ(cudaMemset(vram_, 0, kMax), cudaSuccess);
    params.mem_type = uct::MemType::Cuda;
    ASSERT_EQ(wait(ep_->get_nbx(vram_, n, raddr, *rkey_, params)), Status::Ok);
    ASSERT_EQ(cudaMemcpy(host.data(), vram_, n, cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_EQ(std::memcmp(host.data(), remote_.data(), n), 0);
  }
}

INSTANTIATE_TEST_SUITE_P(Tl, CudaStaging, testing::Values("tcp", "sm"));

// Remote staging on a real GPU: the second worker's cudaMalloc'd memory,
// registered through UCP (cuda_copy's md only), put to and got from host
// memory and from another cudaMalloc'd buffer; the second worker stages it.
class CudaStagingRemote : public CudaStaging {
 protected:
  void SetUp() override {
    CudaStaging::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    ASSERT_EQ(cudaMalloc(&target_, kMax), cudaSuccess);
    Result<std::unique_ptr<MemHandle>> mh = MemHandle::map(*ctx_, target_, kMax);
    ASSERT_TRUE(mh.ok());
    target_mh_ = std::move(*mh);
    ASSERT_EQ(target_mh_->mem_type(), uct::MemType::Cuda);
    Result<std::vector<uint8_t>> packed = target_mh_->rkey_pack();
    ASSERT_TRUE(packed.ok());
    Result<std::unique_ptr<Rkey>> rk = ep_->rkey_unpack(*packed);
    ASSERT_TRUE(rk.ok());
    target_rkey_ = std::move(*rk);
  }

  void TearDown() override {
    target_rkey_.reset();
    target_mh_.reset();
    CudaStaging::TearDown();
    if (target_) (void)cudaFree(target_);
  }

  void* target_ = nullptr;
  std::unique_ptr<MemHandle> target_mh_;
  std::unique_ptr<Rkey> target_rkey_;
};

TEST_P(CudaStagingRemote, HostAndVramToPeerVramAndBack) {
  EXPECT_FALSE(target_rkey_->any_lane()) << "a " << GetParam() << " key to GPU memory";
  const uint64_t taddr = reinterpret_cast<uintptr_t>(target_);
  std::vector<uint8_t> host(kMax), back(kMax);
  for (size_t n : {size_t{8}, kFrag + 1, kMax}) {
    SCOPED_TRACE("size " + std::to_string(n));
    for (size_t i = 0; i < n; ++i) host[i] = pattern(n, i);
    ASSERT_EQ(cudaMemset(target_, 0, kMax), cudaSuccess);
    ASSERT_EQ(wait(ep_->put_nbx(host.data(), n, taddr, *target_rkey_)), Status::Ok);
    ASSERT_EQ(cudaMemcpy(back.data(), target_, n, cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_EQ(std::memcmp(back.data(), host.data(), n), 0);
    std::memset(back.data(), 0, kMax);
    ASSERT_EQ(wait(ep_->get_nbx(back.data(), n, taddr, *target_rkey_)), Status::Ok);
    EXPECT_EQ(std::memcmp(back.data(), host.data(), n), 0);
    // From local GPU memory: staged on both sides.
    for (size_t i = 0; i < n; ++i) host[i] = pattern(n + 1, i);
    ASSERT_EQ(cudaMemcpy(vram_, host.data(), n, cudaMemcpyHostToDevice), cudaSuccess);
    RequestParams params;
    params.mem_type = uct::MemType::Cuda;
    ASSERT_EQ(wait(ep_->put_nbx(vram_, n, taddr, *target_rkey_, params)), Status::Ok);
    ASSERT_EQ(cudaMemcpy(back.data(), target_, n, cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_EQ(std::memcmp(back.data(), host.data(), n), 0);
    ASSERT_EQ(cudaMemset(vram_, 0, kMax), cudaSuccess);
    ASSERT_EQ(wait(ep_->get_nbx(vram_, n, taddr, *target_rkey_, params)), Status::Ok);
    ASSERT_EQ(cudaMemcpy(back.data(), vram_, n, cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_EQ(std::memcmp(back.data(), host.data(), n), 0);
  }
}

INSTANTIATE_TEST_SUITE_P(Tl, CudaStagingRemote, testing::Values("tcp", "sm"));

}  // namespace
}  // namespace mc::ucp::test
