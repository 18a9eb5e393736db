// SPDX-License-Identifier: Apache-2.0
// A segment name has one owner, through each metadata backend (etcd, Redis,
// mc_metadata_server, started by the Services fixture): a second engine with
// the name is refused and changes nothing, an initiator keeps reaching the
// first; only once the first is gone (its lease expired while it was
// stopped; over http, it no longer answers) does another engine take the
// name, and then the first, resumed, finds its name taken, says so, and
// neither overwrites nor deletes the new owner's keys. An initiator uses a
// descriptor from the store only as its owner serves it.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <thread>

#include "common/services.h"
#include "te/te_test_util.h"
#include "ucp/metadata/descriptors.h"
#include "ucp/metadata/store.h"
#include "uct/base/component_loader.h"

namespace mc::te::test::te_owner {
namespace {

using mc::test::Service;
using mc::test::Services;

constexpr size_t kSize = 64 * 1024;
// Both engines take this bare host name, as two engines on one host with
// mc_perftest's default --local_server_name did.
constexpr const char* kName = "127.0.0.1";

class TeOwner : public testing::TestWithParam<Service> {
 protected:
  void SetUp() override {
    if (uct::find_component("tcp") == nullptr) GTEST_SKIP() << "tcp not available";
    url_ = services_.start(GetParam());
    ASSERT_FALSE(url_.empty());
    env_ = loopback_env("tcp", {{"MC_TRANSFER_TIMEOUT", "20s"},
                                {"MC_METADATA_TIMEOUT", "3s"},
                                {"MC_ETCD_LEASE_TTL", "2s"},
                                {"MC_METADATA_REFRESH_INTERVAL", "200ms"},
                                {"MC_HANDSHAKE_TIMEOUT", "1s"}});
  }

  ucs::Result<std::string> lookup(const std::string& key) { return store_get(url_, env_, key); }

  // The generation of the descriptor under the ram key, 0 when none.
  uint64_t published_generation() {
    auto ram = lookup(metadata::ram_key("mooncake", kName));
    if (!ram.ok()) return 0;
    std::string why;
    auto desc = metadata::decode_segment(*ram, &why);
    return desc.ok() ? desc->generation : 0;
  }

  // Reads `length` bytes of segment kName at `addr` through `engine` into a
  // fresh buffer; empty when the transfer did not complete.
  std::vector<uint8_t> read_name(TransferEngine& engine, uint64_t addr, size_t length) {
    const SegmentHandle seg = engine.openSegment(kName);
    if (seg < 0) return {};
    std::vector<uint8_t> local(length);
    if (engine.registerLocalMemory(local.data(), local.size()) != 0) return {};
    auto r = run_batch(engine, {{TransferRequest::READ, local.data(), seg, addr, length}});
    (void)engine.unregisterLocalMemory(local.data());
    if (r.size() != 1 || r[0].s != COMPLETED) return {};
    return local;
  }

  Services services_;
  std::string url_;
  std::map<std::string, std::string> env_;
};

TEST_P(TeOwner, OneOwnerPerSegmentName) {
  const std::string rpc_key = metadata::rpc_meta_key("mooncake", kName);
  TargetProcess first;
  ASSERT_TRUE(first.start(url_, kName, kSize, 5, env_));
  auto first_rpc = lookup(rpc_key);
  ASSERT_TRUE(first_rpc.ok()) << first_rpc.status();
  const uint64_t first_generation = published_generation();
  ASSERT_NE(first_generation, 0u);

  // A second engine with the name is refused, and leaves the keys as they were.
  {
    ScopedEnv scoped(env_);
    TransferEngine second;
    EXPECT_EQ(second.init(url_, kName), static_cast<int>(ucs::Status::Exists));
  }
  std::this_thread::sleep_for(std::chrono::seconds(1));  // five refresh intervals
  EXPECT_EQ(lookup(rpc_key).value_or(""), *first_rpc) << "the first engine's rpc_meta changed";
  EXPECT_EQ(published_generation(), first_generation) << "the first engine's descriptor changed";

  // An initiator reaches the first engine's memory.
  std::unique_ptr<TransferEngine> initiator;
  {
    ScopedEnv scoped(env_);
    initiator = std::make_unique<TransferEngine>();
    ASSERT_EQ(initiator->init(url_, free_segment_name()), 0);
  }
  std::vector<uint8_t> got = read_name(*initiator, first.addr(), kSize);
  ASSERT_EQ(got.size(), kSize);
  for (size_t i = 0; i < kSize; ++i) ASSERT_EQ(got[i], pattern(5, i)) << i;
  ASSERT_EQ(initiator->closeSegment(initiator->openSegment(kName)), 0);

  // The first engine stops answering and renewing: once its lease is gone
  // (over http: at once, as it does not answer), another engine takes the name.
  first.freeze();
  // Its descriptor, still in the store, is not used while it does not answer.
  EXPECT_LT(initiator->openSegment(kName), 0) << "a stopped owner's descriptor was used";
  std::unique_ptr<TransferEngine> second;
  std::vector<uint8_t> second_memory(kSize);
  for (size_t i = 0; i < kSize; ++i) second_memory[i] = pattern(6, i);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  int rc = -1;
  while (rc != 0 && std::chrono::steady_clock::now() < deadline) {
    ScopedEnv scoped(env_);
    second = std::make_unique<TransferEngine>();
    rc = second->init(url_, kName);
    if (rc != 0) {
      EXPECT_EQ(rc, static_cast<int>(ucs::Status::Exists));
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
    }
  }
  ASSERT_EQ(rc, 0) << "the name was never free after its owner stopped";
  ASSERT_EQ(second->registerLocalMemory(second_memory.data(), second_memory.size()), 0);
  auto second_rpc = lookup(rpc_key);
  ASSERT_TRUE(second_rpc.ok());
  EXPECT_NE(*second_rpc, *first_rpc);
  const uint64_t second_generation = published_generation();
  EXPECT_NE(second_generation, first_generation);

  // The first engine resumes: it finds its name taken and says so, and
  // neither its refresher nor its store's lease keeping puts its keys back.
  first.signal(SIGCONT);
  std::this_thread::sleep_for(std::chrono::seconds(3));  // lease keeping and 15 refreshes
  EXPECT_EQ(lookup(rpc_key).value_or(""), *second_rpc) << "the resumed engine overwrote rpc_meta";
  EXPECT_EQ(published_generation(), second_generation) << "the resumed engine overwrote ram";
  EXPECT_NE(first.log().find("was taken by the engine at"), std::string::npos) << first.log();
  EXPECT_EQ(first.log().find("had lost"), std::string::npos) << first.log();

  // Its exit deletes only its own keys: none. (Its example program exits 1:
  // unregistering its buffer cannot be published under a name it lost.)
  EXPECT_NE(first.stop(), -1) << "killed by a signal: " << first.log();
  EXPECT_NE(first.log().find("the name is another engine's now"), std::string::npos)
      << first.log();
  EXPECT_EQ(lookup(rpc_key).value_or(""), *second_rpc) << "the first engine's exit removed them";
  EXPECT_EQ(published_generation(), second_generation);

  // The initiator now reaches the second engine's memory under the name.
  got = read_name(*initiator, reinterpret_cast<uint64_t>(second_memory.data()), kSize);
  ASSERT_EQ(got.size(), kSize);
  for (size_t i = 0; i < kSize; ++i) ASSERT_EQ(got[i], pattern(6, i)) << i;
  initiator.reset();
  second.reset();
  EXPECT_EQ(lookup(rpc_key).status(), ucs::Status::NoElem) << "the owner's exit removes its keys";
}

INSTANTIATE_TEST_SUITE_P(All, TeOwner,
                         testing::Values(Service::Etcd, Service::Redis, Service::MetadataServer),
                         [](const auto& info) { return mc::test::service_name(info.param); });

}  // namespace
}  // namespace mc::te::test::te_owner
