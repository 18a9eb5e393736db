// SPDX-License-Identifier: Apache-2.0
// RDMA into and out of GPU memory registered through dma-buf, over rc_verbs
// and rc_mlx5 on the soft provider with the fake CUDA driver: a peer's put
// lands in the allocation's pages (read through a mapping of its own), a
// get returns them, and an access past the registration fails with the
// remote access error and touches nothing.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "uct/ib/fake_gpu.h"
#include "uct/uct_test.h"

namespace mc::uct::test {
namespace {

class RcGpu : public testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    use_soft_verbs_unless_told();
    const char* provider = std::getenv("MC_IB_PROVIDER");
    if (!provider || std::string(provider) != "soft") {
      GTEST_SKIP() << "needs the soft provider's dma-buf registration (MC_IB_PROVIDER=soft)";
    }
    ASSERT_TRUE(FakeCuda::get().ok()) << FakeCuda::path();
    for (const Resource& r : available_resources()) {
      if (r.tl.tl_name == GetParam()) base_ = r;
    }
    if (base_.component.empty()) GTEST_SKIP() << GetParam() << " is not loaded";
    base_.tl.dev_name = "mcsoft0:1";
    // Read by each md as it opens.
    setenv("MC_IB_CUDA_DRIVER", FakeCuda::path().c_str(), 1);
    setenv("MC_IB_GPU_REG", "dmabuf", 1);
    page_ = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  }
  void TearDown() override {
    unsetenv("MC_IB_CUDA_DRIVER");
    unsetenv("MC_IB_GPU_REG");
  }
  /// Posts `op` until the send queue takes it, and waits for it.
  template <typename Op>
  Status run(Op op, Entity& a, Entity& b) {
    TestCompletion c;
    Status s = op(&c.comp);
    while (s == Status::NoResource) {
      a.iface().progress(), b.iface().progress();
      s = op(&c.comp);
    }
    return wait_op(s, c, {&a, &b});
  }

  Resource base_;
  size_t page_ = 4096;
};

TEST_P(RcGpu, PutLandsInGpuPagesAndGetReturnsThem) {
  std::unique_ptr<Entity> me = make_entity(base_);
  std::unique_ptr<Entity> peer = make_entity(base_);
  ASSERT_TRUE(me && peer);
  ASSERT_TRUE(peer->md().query().reg_mem_types & mem_type_bit(MemType::Cuda));
  FakeGpuBuffer gpu(4 * page_);
  ASSERT_TRUE(gpu.ok());
  std::memset(gpu.view, 0xee, gpu.size);
  const size_t off = page_ + 64, len = 2 * page_;
  Result<std::unique_ptr<MemHandle>> memh =
      peer->md().mem_reg(reinterpret_cast<void*>(gpu.address(off)), len, kAccessAll);
  ASSERT_TRUE(memh.ok());
  EXPECT_EQ((*memh)->mem_type(), MemType::Cuda);
  std::vector<uint8_t> packed;
  ASSERT_EQ(peer->md().mkey_pack(**memh, &packed), Status::Ok);
  std::unique_ptr<Rkey> rkey = *me->md().rkey_unpack(packed);
  Result<std::unique_ptr<Endpoint>> ep = me->connect(*peer);
  ASSERT_TRUE(ep.ok());

  Buffer src(*me, len);
  src.fill(11);
  Iov out{src.data.data(), len, src.memh.get()};
  ASSERT_EQ(
      run([&](Completion* c) { return (*ep)->put_zcopy(&out, 1, gpu.address(off), *rkey, c); }, *me,
          *peer),
      Status::Ok);
  EXPECT_EQ(std::memcmp(gpu.view + off, src.data.data(), len), 0);
  EXPECT_EQ(gpu.view[off - 1], 0xee);
  EXPECT_EQ(gpu.view[off + len], 0xee);

  for (size_t i = 0; i < len; ++i) gpu.view[off + i] = static_cast<uint8_t>(i * 7 + 3);
  Buffer back(*me, len);
  back.fill(12);
  Iov in{back.data.data(), len, back.memh.get()};
  ASSERT_EQ(run([&](Completion* c) { return (*ep)->get_zcopy(&in, 1, gpu.address(off), *rkey, c); },
                *me, *peer),
            Status::Ok);
  EXPECT_EQ(std::memcmp(back.data.data(), gpu.view + off, len), 0);
}

TEST_P(RcGpu, AccessPastTheDmaBufRegistrationFailsAndTouchesNothing) {
  int handler_calls = 0;
  std::unique_ptr<Entity> me = make_entity(base_, [&](Endpoint*, Status) { ++handler_calls; });
  std::unique_ptr<Entity> peer = make_entity(base_);
  ASSERT_TRUE(me && peer);
  FakeGpuBuffer gpu(2 * page_);
  ASSERT_TRUE(gpu.ok());
  std::memset(gpu.view, 0xee, gpu.size);
  const size_t len = page_;
  Result<std::unique_ptr<MemHandle>> memh = peer->md().mem_reg(gpu.device, len, kAccessAll);
  ASSERT_TRUE(memh.ok());
  std::vector<uint8_t> packed;
  ASSERT_EQ(peer->md().mkey_pack(**memh, &packed), Status::Ok);
  std::unique_ptr<Rkey> rkey = *me->md().rkey_unpack(packed);
  Result<std::unique_ptr<Endpoint>> ep = me->connect(*peer);
  ASSERT_TRUE(ep.ok());
  // 64 bytes straddling the end of the registration (the allocation goes on).
  Buffer src(*me, 64);
  src.fill(13);
  Iov iov{src.data.data(), 64, src.memh.get()};
  EXPECT_EQ(
      run([&](Completion* c) { return (*ep)->put_zcopy(&iov, 1, gpu.address(len - 32), *rkey, c); },
          *me, *peer),
      Status::IoError);
  ASSERT_TRUE(progress_until([&] { return handler_calls > 0; }, {me.get(), peer.get()}));
  for (size_t i = 0; i < gpu.size; ++i) {
    ASSERT_EQ(gpu.view[i], 0xee) << "the refused put wrote at " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Rc, RcGpu, testing::Values("rc_verbs", "rc_mlx5"),
                         [](const testing::TestParamInfo<std::string>& i) { return i.param; });

}  // namespace
}  // namespace mc::uct::test
