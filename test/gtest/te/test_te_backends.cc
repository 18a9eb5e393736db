// SPDX-License-Identifier: Apache-2.0
// The Transfer Engine through each metadata backend (mc_metadata_server,
// etcd, Redis, started by the Services fixture on free loopback ports) over
// tcp and sm, between two real processes: the target publishes rpc_meta and
// ram keys and removes them when it ends; a stopped server leaves existing
// segments working and fails new opens cleanly; an etcd lease expires after
// a target crash.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <thread>

#include "common/services.h"
#include "te/te_test_util.h"
#include "ucp/metadata/descriptors.h"
#include "ucp/metadata/store.h"
#include "uct/base/component_loader.h"

namespace mc::te::test::te_backends {
namespace {

using mc::test::Service;
using mc::test::Services;

constexpr size_t kSize = 256 * 1024;
constexpr unsigned kSeed = 13;

struct Param {
  Service service;
  std::string tls;
};

class TeBackend : public testing::TestWithParam<Param> {
 protected:
  void SetUp() override {
    if (uct::find_component(GetParam().tls) == nullptr)
      GTEST_SKIP() << GetParam().tls << " not available";
    url_ = services_.start(GetParam().service);
    ASSERT_FALSE(url_.empty());
    env_ = loopback_env(GetParam().tls, {{"MC_METADATA_TIMEOUT", "3s"}});
  }


  std::unique_ptr<TransferEngine> make_engine() {
    ScopedEnv scoped(env_);
    auto engine = std::make_unique<TransferEngine>();
    EXPECT_EQ(engine->init(url_, free_segment_name()), 0);
    return engine;
  }

  // The value of `key` in the store, or the status.
  ucs::Result<std::string> lookup(const std::string& key) { return store_get(url_, env_, key); }

  Services services_;
  std::string url_;
  std::map<std::string, std::string> env_;
};

TEST_P(TeBackend, TwoProcessesMoveDataAndKeysComeAndGo) {
  TargetProcess target;
  const std::string name = free_segment_name();
  ASSERT_TRUE(target.start(url_, name, kSize, kSeed, env_));
  ASSERT_EQ(target.segment(), name);
  // The document's keys, in its shape.
  auto rpc = lookup(metadata::rpc_meta_key("mooncake", name));
  ASSERT_TRUE(rpc.ok()) << rpc.status();
  std::string why;
  auto meta = metadata::decode_rpc_meta(*rpc, &why);
  ASSERT_TRUE(meta.ok()) << why;
  EXPECT_EQ(meta->ip_or_host_name, "127.0.0.1");
  EXPECT_EQ(std::to_string(meta->rpc_port), name.substr(name.find(':') + 1));
  auto ram = lookup(metadata::ram_key("mooncake", name));
  ASSERT_TRUE(ram.ok()) << ram.status();
  auto desc = metadata::decode_segment(*ram, &why);
  ASSERT_TRUE(desc.ok()) << why;
  ASSERT_EQ(desc->buffers.size(), 1u);
  EXPECT_EQ(desc->buffers[0].addr, target.addr());
  EXPECT_FALSE(desc->worker_address.empty());

  auto engine = make_engine();
  const SegmentHandle seg = engine->openSegment(name);
  ASSERT_GE(seg, 0);
  std::vector<uint8_t> local(kSize);
  ASSERT_EQ(engine->registerLocalMemory(local.data(), local.size()), 0);
  auto r = run_batch(*engine, {{TransferRequest::READ, local.data(), seg, target.addr(), kSize}});
  ASSERT_EQ(r.size(), 1u);
  ASSERT_EQ(r[0].s, COMPLETED);
  for (size_t i = 0; i < kSize; ++i) ASSERT_EQ(local[i], pattern(kSeed, i)) << i;
  for (size_t i = 0; i < kSize; ++i) local[i] = pattern(77, i);
  r = run_batch(*engine, {{TransferRequest::WRITE, local.data(), seg, target.addr(), kSize}});
  ASSERT_EQ(r.size(), 1u);
  ASSERT_EQ(r[0].s, COMPLETED);
  std::fill(local.begin(), local.end(), 0);
  r = run_batch(*engine, {{TransferRequest::READ, local.data(), seg, target.addr(), kSize}});
  ASSERT_EQ(r.size(), 1u);
  ASSERT_EQ(r[0].s, COMPLETED);
  for (size_t i = 0; i < kSize; ++i) ASSERT_EQ(local[i], pattern(77, i)) << i;
  EXPECT_LT(engine->openSegment("no-such-segment"), 0);

  // A clean exit removes the target's keys.
  ASSERT_EQ(target.stop(), 0) << target.log();
  EXPECT_EQ(lookup(metadata::ram_key("mooncake", name)).status(), ucs::Status::NoElem);
  EXPECT_EQ(lookup(metadata::rpc_meta_key("mooncake", name)).status(), ucs::Status::NoElem);
}

TEST_P(TeBackend, ServerStoppedAfterInitExistingSegmentsKeepWorking) {
  TargetProcess target, later;
  ASSERT_TRUE(target.start(url_, free_segment_name(), kSize, kSeed, env_));
  ASSERT_TRUE(later.start(url_, free_segment_name(), kSize, kSeed + 1, env_));
  auto engine = make_engine();
  const SegmentHandle seg = engine->openSegment(target.segment());
  ASSERT_GE(seg, 0);
  std::vector<uint8_t> local(kSize);
  ASSERT_EQ(engine->registerLocalMemory(local.data(), local.size()), 0);
  auto r = run_batch(*engine, {{TransferRequest::READ, local.data(), seg, target.addr(), 4096}});
  ASSERT_EQ(r.size(), 1u);
  ASSERT_EQ(r[0].s, COMPLETED);

  services_.stop(GetParam().service);
  EXPECT_LT(engine->openSegment(later.segment()), 0) << "the store is gone";
  std::vector<uint8_t> more(4096);
  EXPECT_LT(engine->registerLocalMemory(more.data(), more.size()), 0) << "cannot publish";
  r = run_batch(*engine, {{TransferRequest::READ, local.data(), seg, target.addr(), kSize}});
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].s, COMPLETED) << "the open segment's endpoint needs no store";
  for (size_t i = 0; i < kSize; ++i) ASSERT_EQ(local[i], pattern(kSeed, i)) << i;
}

// The document's API from C: a C target publishes through the store, a C
// initiator process finds it there and checks every byte it reads and
// writes back; this process's C++ engine reads the C target too.
TEST_P(TeBackend, CApiTargetAndInitiatorThroughTheStore) {
  TargetProcess target;
  const std::string name = free_segment_name();
  ASSERT_TRUE(target.start(url_, name, kSize, kSeed, env_, true));
  ASSERT_EQ(target.segment(), name);
  std::string out;
  const int rc = run_process({example_path(true), "initiator", url_, free_segment_name(), name,
                              std::to_string(kSeed)},
                             env_, 120, &out);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("initiator: read, write, read back of"), std::string::npos) << out;

  auto engine = make_engine();
  const SegmentHandle seg = engine->openSegment(name);
  ASSERT_GE(seg, 0);
  std::vector<uint8_t> local(kSize);
  ASSERT_EQ(engine->registerLocalMemory(local.data(), local.size()), 0);
  auto r = run_batch(*engine, {{TransferRequest::READ, local.data(), seg, target.addr(), kSize}});
  ASSERT_EQ(r.size(), 1u);
  ASSERT_EQ(r[0].s, COMPLETED);
  for (size_t i = 0; i < kSize; ++i) ASSERT_EQ(local[i], pattern(kSeed, i)) << i;
  EXPECT_EQ(target.stop(), 0) << target.log();
}

std::string param_name(const testing::TestParamInfo<Param>& info) {
  return mc::test::service_name(info.param.service) + "_" + info.param.tls;
}

INSTANTIATE_TEST_SUITE_P(All, TeBackend,
                         testing::Values(Param{Service::MetadataServer, "tcp"},
                                         Param{Service::MetadataServer, "sm"},
                                         Param{Service::Etcd, "tcp"}, Param{Service::Etcd, "sm"},
                                         Param{Service::Redis, "tcp"}, Param{Service::Redis, "sm"}),
                         param_name);

TEST(TeEtcdLease, CrashedTargetsSegmentExpires) {
  Services services;
  const std::string url = services.start_etcd();
  ASSERT_FALSE(url.empty());
  std::map<std::string, std::string> env = {
      {"MC_TLS", "tcp"}, {"MC_NET_DEVICES", "lo"}, {"MC_ETCD_LEASE_TTL", "2s"}};
  const std::string name = free_segment_name();
  TargetProcess target;
  ASSERT_TRUE(target.start(url, name, 4096, 1, env));
  ScopedEnv scoped(env);
  std::string error;
  auto store = metadata::open_store(url, metadata::StoreOptions{}, &error);
  ASSERT_TRUE(store.ok()) << error;
  const std::string key = metadata::ram_key("mooncake", name);
  ASSERT_TRUE((*store)->get(key).ok());
  target.kill();  // no clean-up: only the lease can remove the keys
  ucs::Status s = ucs::Status::Ok;
  for (int i = 0; i < 300 && s == ucs::Status::Ok; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    s = (*store)->get(key).status();
  }
  EXPECT_EQ(s, ucs::Status::NoElem) << "the key outlived its lease";
  TransferEngine engine;
  ASSERT_EQ(engine.init(url, "127.0.0.1"), 0);
  EXPECT_LT(engine.openSegment(name), 0);
}

}  // namespace
}  // namespace mc::te::test::te_backends
