// SPDX-License-Identifier: Apache-2.0
// Notifications of the Transfer Engine (submitTransferWithNotify,
// sendNotifyByName / ByID, getNotifies): the frame codec against malformed
// input; two engines of this process over tcp, sm and rc_verbs (the soft
// verbs provider) through P2PHANDSHAKE: the target's memory holds every
// byte of a batch when its notification is taken, exactly once and in
// order, binary-safe, with the sender's proved segment; a failed task drops
// the notification; the size and queue limits; MC_AUTH_TOKEN; a forged
// sender; the C API; and the same through etcd and Redis.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <thread>

#include "common/services.h"
#include "mc/transfer_engine_c.h"
#include "te/te_test_util.h"
#include "ucp/te/handshake.h"
#include "ucp/te/notify_wire.h"
#include "ucp/te/rpc_server.h"
#include "ucs/sys/sys.h"
#include "uct/base/component_loader.h"
#include "uct/uct_test.h"

namespace mc::te::test {
namespace {

using namespace std::string_literals;

constexpr int kLimitS = 120;  // a hang detector, not a timed assertion

// Waits until `engine` has taken `count` notifications in all (appended to
// `*got`), or the hang limit passes.
bool wait_notifies(TransferEngine& engine, size_t count, std::vector<ReceivedNotify>* got) {
  const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(kLimitS);
  while (got->size() < count && std::chrono::steady_clock::now() < limit) {
    std::vector<ReceivedNotify> now;
    if (engine.getNotifies(now) != 0) return false;
    got->insert(got->end(), now.begin(), now.end());
    if (now.empty()) std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  return got->size() >= count;
}

// Waits until the batch's notification is resolved; its status.
int wait_batch_notify(TransferEngine& engine, BatchID batch) {
  const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(kLimitS);
  int s = engine.getBatchNotifyStatus(batch);
  while (s == 1 && std::chrono::steady_clock::now() < limit) {
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    s = engine.getBatchNotifyStatus(batch);
  }
  return s;
}

TEST(TeNotifyWire, RoundTripIsBinarySafe) {
  NotifyFrame f;
  f.sender = "127.0.0.1:15001";
  f.generation = 0x1122334455667788ULL;
  f.seq = 42;
  f.nonce = random_notify_key();
  f.key = random_notify_key();
  f.name = "na\0me"s;
  f.msg = "\0\xff\0msg\0"s;
  NotifyFrame g;
  std::string why;
  ASSERT_EQ(decode_notify(encode_notify(f), &g, &why), Status::Ok) << why;
  EXPECT_EQ(g.sender, f.sender);
  EXPECT_EQ(g.generation, f.generation);
  EXPECT_EQ(g.seq, f.seq);
  EXPECT_TRUE(notify_key_equal(g.nonce, f.nonce));
  EXPECT_TRUE(notify_key_equal(g.key, f.key));
  EXPECT_EQ(g.name, f.name);
  EXPECT_EQ(g.msg, f.msg);
  NotifyKeyFrame k{random_notify_key(), random_notify_key()}, k2;
  ASSERT_EQ(decode_notify_key(encode_notify_key(k), &k2, &why), Status::Ok) << why;
  EXPECT_TRUE(notify_key_equal(k.nonce, k2.nonce));
  EXPECT_TRUE(notify_key_equal(k.key, k2.key));
}

TEST(TeNotifyWire, EveryTruncationTrailerVersionAndLengthIsRefused) {
  NotifyFrame f;
  f.sender = "s";
  f.name = "n";
  f.msg = "m";
  const std::string good = encode_notify(f);
  std::string why;
  for (size_t n = 0; n < good.size(); ++n) {
    NotifyFrame g;
    EXPECT_EQ(decode_notify(good.substr(0, n), &g, &why), Status::BadData) << n;
  }
  NotifyFrame g;
  EXPECT_EQ(decode_notify(good + "x", &g, &why), Status::BadData);
  std::string v2 = good;
  v2[0] = 2;
  EXPECT_EQ(decode_notify(v2, &g, &why), Status::VersionMismatch);
  // The last length (notify_msg's) claims far more than is there.
  std::string big = good;
  const size_t msg_len_at = good.size() - 1 - 4;
  big[msg_len_at + 3] = '\x7f';
  EXPECT_EQ(decode_notify(big, &g, &why), Status::BadData);
  const std::string key = encode_notify_key({});
  NotifyKeyFrame k;
  for (size_t n = 0; n < key.size(); ++n) {
    EXPECT_EQ(decode_notify_key(key.substr(0, n), &k, &why), Status::BadData) << n;
  }
  EXPECT_EQ(decode_notify_key(key + "x", &k, &why), Status::BadData);
}

class TeNotify : public testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (uct::find_component(GetParam()) == nullptr) {
      GTEST_SKIP() << GetParam() << " transport is not available";
    }
    env_ = loopback_env(GetParam());
    if (GetParam().starts_with("rc_")) {
      uct::test::use_soft_verbs_unless_told();
      env_.erase("MC_NET_DEVICES");  // the RDMA devices, not lo
    }
  }

  std::unique_ptr<TransferEngine> make_engine(
      const std::map<std::string, std::string>& extra = {}) {
    return make_p2p_engine(env_, extra);
  }

  std::map<std::string, std::string> env_;
};

// Each round writes the whole target buffer with a new pattern in several
// tasks and a notification; the moment the target takes it, its memory
// must hold every byte of that round.
TEST_P(TeNotify, TargetMemoryHoldsTheBatchWhenItsNotificationIsTaken) {
  constexpr size_t kSize = 4 << 20, kTasks = 4, kRounds = 12;
  auto target = make_engine();
  auto sender = make_engine();
  std::vector<uint8_t> dst(kSize, 0), src(kSize);
  ASSERT_EQ(target->registerLocalMemory(dst.data(), kSize, "cpu:0"), 0);
  ASSERT_EQ(sender->registerLocalMemory(src.data(), kSize, "cpu:0"), 0);
  const SegmentHandle seg = sender->openSegment(target->getLocalIpAndPort());
  ASSERT_GE(seg, 0);
  const uint64_t base = reinterpret_cast<uint64_t>(dst.data());
  for (unsigned round = 0; round < kRounds; ++round) {
    for (size_t i = 0; i < kSize; ++i) src[i] = pattern(round + 1, i);
    std::vector<TransferRequest> reqs;
    for (size_t t = 0; t < kTasks; ++t) {
      const size_t off = t * (kSize / kTasks);
      reqs.push_back({TransferRequest::WRITE, src.data() + off, seg, base + off, kSize / kTasks});
    }
    const BatchID batch = sender->allocateBatchID(kTasks);
    const NotifyDesc desc{"round\0"s + std::to_string(round), "\0msg\0"s + std::to_string(round)};
    ASSERT_EQ(sender->submitTransferWithNotify(batch, reqs, desc), 0);
    std::vector<ReceivedNotify> got;
    ASSERT_TRUE(wait_notifies(*target, 1, &got)) << "round " << round;
    // The check is here, right after getNotifies handed it over.
    size_t wrong = 0, first = SIZE_MAX;
    for (size_t i = 0; i < kSize; ++i) {
      if (dst[i] != pattern(round + 1, i)) {
        if (wrong++ == 0) first = i;
      }
    }
    EXPECT_EQ(wrong, 0u) << "round " << round << ": first wrong byte at " << first;
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].notify.name, desc.name);
    EXPECT_EQ(got[0].notify.notify_msg, desc.notify_msg);
    EXPECT_EQ(got[0].sender, sender->getLocalIpAndPort());
    EXPECT_EQ(wait_batch_notify(*sender, batch), 0);
    for (size_t t = 0; t < kTasks; ++t) EXPECT_EQ(wait_task(*sender, batch, t).s, COMPLETED);
    if (round == 0) {
      // The data went over the transport under test.
      std::vector<SegmentPathInfo> paths;
      ASSERT_EQ(sender->getSegmentPaths(seg, paths, src.data(), base), 0);
      ASSERT_FALSE(paths.empty());
      EXPECT_TRUE(paths[0].local_device.starts_with(GetParam())) << paths[0].local_device;
      EXPECT_GT(paths[0].bytes, 0u);
    }
    EXPECT_EQ(sender->freeBatchID(batch), 0);
  }
}

// Exactly once and in order: the target takes what was sent, each once,
// in the order sent; a last one proves nothing else is on its way.
TEST_P(TeNotify, ExactlyOnceInOrderPerSender) {
  constexpr int kCount = 100;
  auto target = make_engine();
  auto sender = make_engine();
  const std::string name = target->getLocalIpAndPort();
  const SegmentHandle seg = sender->openSegment(name);
  ASSERT_GE(seg, 0);
  for (int i = 0; i <= kCount; ++i) {
    const NotifyDesc d{"n", std::to_string(i)};
    ASSERT_EQ(i % 2 ? sender->sendNotifyByID(seg, d) : sender->sendNotifyByName(name, d), 0) << i;
  }
  std::vector<ReceivedNotify> got;
  ASSERT_TRUE(wait_notifies(*target, kCount + 1, &got));
  ASSERT_EQ(got.size(), size_t{kCount + 1});
  for (int i = 0; i <= kCount; ++i) {
    EXPECT_EQ(got[i].notify.notify_msg, std::to_string(i));
    EXPECT_EQ(got[i].sender, sender->getLocalIpAndPort());
  }
  std::vector<NotifyDesc> rest;
  ASSERT_EQ(target->getNotifies(rest), 0);
  EXPECT_TRUE(rest.empty());
}

// A batch whose task fails (INVALID: outside the segment) does not notify;
// its notify status says Canceled. A later notification arrives alone.
TEST_P(TeNotify, FailedTaskDropsTheNotification) {
  auto target = make_engine();
  auto sender = make_engine();
  std::vector<uint8_t> dst(4096), src(4096, 7);
  ASSERT_EQ(target->registerLocalMemory(dst.data(), dst.size(), "cpu:0"), 0);
  const SegmentHandle seg = sender->openSegment(target->getLocalIpAndPort());
  ASSERT_GE(seg, 0);
  const uint64_t base = reinterpret_cast<uint64_t>(dst.data());
  const BatchID batch = sender->allocateBatchID(2);
  ASSERT_EQ(
      sender->submitTransferWithNotify(batch,
                                       {{TransferRequest::WRITE, src.data(), seg, base, 4096},
                                        {TransferRequest::WRITE, src.data(), seg, base, 8192}},
                                       {"dropped", "x"}),
      0);
  EXPECT_EQ(wait_batch_notify(*sender, batch), static_cast<int>(Status::Canceled));
  EXPECT_EQ(wait_task(*sender, batch, 0).s, COMPLETED);
  TransferStatus st{};
  ASSERT_EQ(sender->getTransferStatus(batch, 1, st), 0);
  EXPECT_EQ(st.s, INVALID);
  EXPECT_EQ(sender->sendNotifyByID(seg, {"after", "y"}), 0);
  std::vector<ReceivedNotify> got;
  ASSERT_TRUE(wait_notifies(*target, 1, &got));
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].notify.name, "after");
  // Entries to no segment, or a second notification while one is pending.
  EXPECT_EQ(sender->submitTransferWithNotify(batch, {}, {"n", "m"}),
            static_cast<int>(Status::InvalidParam));
  EXPECT_EQ(sender->freeBatchID(batch), 0);
}

TEST_P(TeNotify, SizeAndQueueLimitsAreErrorsAtTheSender) {
  auto target = make_engine({{"MC_NOTIFY_QUEUE_LENGTH", "3"}, {"MC_NOTIFY_MAX_SIZE", "100"}});
  auto sender = make_engine({{"MC_NOTIFY_MAX_SIZE", "200"}});
  const std::string name = target->getLocalIpAndPort();
  // Past the sender's own limit: refused before anything is sent.
  EXPECT_EQ(sender->sendNotifyByName(name, {std::string(150, 'a'), std::string(51, 'b')}),
            static_cast<int>(Status::MessageTruncated));
  // Within the sender's, past the target's.
  EXPECT_EQ(sender->sendNotifyByName(name, {std::string(100, 'a'), "b"}),
            static_cast<int>(Status::MessageTruncated));
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(sender->sendNotifyByName(name, {"q", std::to_string(i)}), 0) << i;
  }
  EXPECT_EQ(sender->sendNotifyByName(name, {"q", "3"}), static_cast<int>(Status::NoResource));
  // A batch's notification to the full queue: its status says so.
  std::vector<uint8_t> dst(4096), src(4096, 1);
  ASSERT_EQ(target->registerLocalMemory(dst.data(), dst.size(), "cpu:0"), 0);
  const SegmentHandle seg = sender->openSegment(name);
  ASSERT_GE(seg, 0);
  const BatchID batch = sender->allocateBatchID(1);
  ASSERT_EQ(sender->submitTransferWithNotify(batch,
                                             {{TransferRequest::WRITE, src.data(), seg,
                                               reinterpret_cast<uint64_t>(dst.data()), 4096}},
                                             {"q", "batch"}),
            0);
  EXPECT_EQ(wait_batch_notify(*sender, batch), static_cast<int>(Status::NoResource));
  EXPECT_EQ(sender->submitTransferWithNotify(batch, {}, {std::string(300, 'x'), ""}),
            static_cast<int>(Status::MessageTruncated));
  std::vector<ReceivedNotify> got;
  ASSERT_TRUE(wait_notifies(*target, 3, &got));
  ASSERT_EQ(got.size(), 3u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(got[i].notify.notify_msg, std::to_string(i));
  // Room again: taken.
  EXPECT_EQ(sender->sendNotifyByName(name, {"q", "4"}), 0);
  got.clear();
  ASSERT_TRUE(wait_notifies(*target, 1, &got));
  EXPECT_EQ(got[0].notify.notify_msg, "4");
  EXPECT_EQ(sender->freeBatchID(batch), 0);
}

TEST_P(TeNotify, AuthTokenGatesNotifications) {
  auto target = make_engine({{"MC_AUTH_TOKEN", "secret"}});
  auto stranger = make_engine();
  auto wrong = make_engine({{"MC_AUTH_TOKEN", "guess"}});
  auto peer = make_engine({{"MC_AUTH_TOKEN", "secret"}});
  const std::string name = target->getLocalIpAndPort();
  EXPECT_EQ(stranger->sendNotifyByName(name, {"a", "stranger"}),
            static_cast<int>(Status::Rejected));
  EXPECT_EQ(wrong->sendNotifyByName(name, {"a", "wrong"}), static_cast<int>(Status::Rejected));
  EXPECT_EQ(peer->sendNotifyByName(name, {"a", "peer"}), 0);
  std::vector<ReceivedNotify> got;
  ASSERT_TRUE(wait_notifies(*target, 1, &got));
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].notify.notify_msg, "peer");
  EXPECT_EQ(got[0].sender, peer->getLocalIpAndPort());
}

// Another client claims to be `victim` (a real engine that sent nothing):
// the target sends the key to the victim's address, which awaits none, so
// the claim is never taken; the victim's own notifications still are.
TEST_P(TeNotify, ForgedSenderIsNotTaken) {
  auto target = make_engine();
  auto victim = make_engine();
  const std::string name = target->getLocalIpAndPort();
  auto hp = split_host_port(name);
  ASSERT_TRUE(hp.ok());
  NotifyFrame f;
  f.sender = victim->getLocalIpAndPort();
  f.generation = 1;
  f.seq = 1;
  f.name = "forged";
  for (int attempt = 0; attempt < 3; ++attempt) {
    f.nonce = random_notify_key();
    f.key = random_notify_key();  // a guess
    std::string why;
    Result<RpcReply> reply =
        rpc_call(hp->first, hp->second, kNotify, encode_auth_request("", encode_notify(f)), 1 << 20,
                 std::chrono::seconds(5), &why);
    ASSERT_TRUE(reply.ok()) << why;
    EXPECT_EQ(reply->code, kNotifyNeedKey);
  }
  // A malformed frame is refused, the listener still serves.
  std::string why;
  Result<RpcReply> bad =
      rpc_call(hp->first, hp->second, kNotify, encode_auth_request("", "\x01\x00\xff\xff"), 1 << 20,
               std::chrono::seconds(5), &why);
  ASSERT_TRUE(bad.ok()) << why;
  EXPECT_EQ(reply_status(bad->code), Status::BadData);
  EXPECT_EQ(victim->sendNotifyByName(name, {"real", "1"}), 0);
  std::vector<ReceivedNotify> got;
  ASSERT_TRUE(wait_notifies(*target, 1, &got));
  ASSERT_EQ(got.size(), 1u) << "only the victim's own";
  EXPECT_EQ(got[0].notify.name, "real");
  EXPECT_EQ(got[0].sender, victim->getLocalIpAndPort());
}

// A sender of its own (a listener that answers kNotifyKey) proves its
// address, then sends seq 5 twice (a retry after a lost answer), an older
// seq, and seq 6: the target takes 5 and 6, once each. A new generation
// must prove itself again.
TEST_P(TeNotify, ARepeatedSeqIsTakenOnce) {
  auto target = make_engine();
  std::mutex mu;
  std::optional<NotifyKeyFrame> given;
  RpcServer::Params p;
  p.bind_ip = "127.0.0.1";
  p.min_port = 20000;
  p.max_port = 40000;
  auto fake = RpcServer::start(
      p, [](const std::string&, std::string*) -> Result<std::string> { return Status::NoElem; },
      [&](uint16_t code, std::string_view body, const std::string&) {
        NotifyKeyFrame k;
        std::string why;
        if (code != kNotifyKey || decode_notify_key(body, &k, &why) != Status::Ok) {
          return RpcReply{static_cast<uint16_t>(-static_cast<int>(Status::BadData)), why};
        }
        std::lock_guard<std::mutex> lock(mu);
        given = k;
        return RpcReply{};
      });
  ASSERT_TRUE(fake.ok());
  auto hp = split_host_port(target->getLocalIpAndPort());
  ASSERT_TRUE(hp.ok());
  NotifyFrame f;
  f.sender = "127.0.0.1:" + std::to_string((*fake)->port());
  f.generation = 7;
  f.nonce = random_notify_key();
  auto send = [&](uint64_t seq, const std::string& msg) {
    f.seq = seq;
    f.msg = msg;
    std::string why;
    Result<RpcReply> r =
        rpc_call(hp->first, hp->second, kNotify, encode_auth_request("", encode_notify(f)), 1 << 20,
                 std::chrono::seconds(5), &why);
    EXPECT_TRUE(r.ok()) << why;
    return r.ok() ? static_cast<int>(r->code) : -1;
  };
  EXPECT_EQ(send(5, "five"), kNotifyNeedKey);
  const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(kLimitS);
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (given || std::chrono::steady_clock::now() > limit) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_TRUE(given.has_value()) << "no key came to the sender's listener";
  EXPECT_TRUE(notify_key_equal(given->nonce, f.nonce));
  f.key = given->key;
  EXPECT_EQ(send(5, "five"), 0);
  EXPECT_EQ(send(5, "five again"), 0);
  EXPECT_EQ(send(4, "four"), 0);
  EXPECT_EQ(send(6, "six"), 0);
  f.generation = 8;  // restarted: the old key proves nothing
  EXPECT_EQ(send(1, "new generation"), kNotifyNeedKey);
  std::vector<ReceivedNotify> got;
  ASSERT_TRUE(wait_notifies(*target, 2, &got));
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].notify.notify_msg, "five");
  EXPECT_EQ(got[1].notify.notify_msg, "six");
  EXPECT_EQ(got[0].sender, f.sender);
}

TEST_P(TeNotify, CApiSendsAndTakesBinaryNotifications) {
  mc_te_t* target = mc_te_create();
  mc_te_t* sender = mc_te_create();
  ASSERT_TRUE(target && sender);
  {
    ScopedEnv scoped(env_);
    ASSERT_EQ(mc_te_init(target, "P2PHANDSHAKE", "127.0.0.1"), 0);
    ASSERT_EQ(mc_te_init(sender, "P2PHANDSHAKE", "127.0.0.1"), 0);
  }
  char name[64], self[64];
  ASSERT_EQ(mc_te_get_local_ip_and_port(target, name, sizeof(name)), 0);
  ASSERT_EQ(mc_te_get_local_ip_and_port(sender, self, sizeof(self)), 0);
  const char n[] = {'a', '\0', 'b'};
  const char m[] = {'\0', 'x', '\0'};
  const mc_te_notify_desc_t desc{n, sizeof(n), m, sizeof(m)};
  EXPECT_EQ(mc_te_send_notify_by_name(sender, name, &desc), 0);
  std::vector<uint8_t> dst(8192), src(8192, 3);
  ASSERT_EQ(mc_te_register_local_memory(target, dst.data(), dst.size(), "cpu:0", 1), 0);
  const mc_te_segment_id_t seg = mc_te_open_segment(sender, name);
  ASSERT_GE(seg, 0);
  const mc_te_batch_id_t batch = mc_te_allocate_batch_id(sender, 1);
  const mc_te_request_t req{MC_TE_WRITE, src.data(), seg, reinterpret_cast<uint64_t>(dst.data()),
                            dst.size()};
  const mc_te_notify_desc_t empty{nullptr, 0, "batch", 5};
  ASSERT_EQ(mc_te_submit_transfer_with_notify(sender, batch, &req, 1, &empty), 0);
  mc_te_received_notify_t* got = nullptr;
  size_t count = 0, total = 0;
  std::vector<std::string> msgs;
  const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(kLimitS);
  while (total < 2 && std::chrono::steady_clock::now() < limit) {
    ASSERT_EQ(mc_te_get_notifies(target, &got, &count), 0);
    for (size_t i = 0; i < count; ++i) {
      EXPECT_EQ(std::string(got[i].sender, got[i].sender_len), self);
      EXPECT_EQ(got[i].sender[got[i].sender_len], '\0');
      msgs.push_back(std::string(got[i].name, got[i].name_len) + "|" +
                     std::string(got[i].notify_msg, got[i].notify_msg_len));
    }
    total += count;
    mc_te_free_notifies(got, count);
  }
  ASSERT_EQ(msgs.size(), 2u);
  EXPECT_EQ(msgs[0], "a\0b|\0x\0"s);
  EXPECT_EQ(msgs[1], "|batch");
  for (uint8_t b : dst) ASSERT_EQ(b, 3);
  // Set once the sender read the target's answer, which may be after the
  // target handed the notification over.
  int nst = mc_te_get_batch_notify_status(sender, batch);
  while (nst == 1 && std::chrono::steady_clock::now() < limit) {
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    nst = mc_te_get_batch_notify_status(sender, batch);
  }
  EXPECT_EQ(nst, 0);
  EXPECT_EQ(mc_te_send_notify_by_id(sender, seg + 100, &desc), static_cast<int>(Status::NoElem));
  mc_te_transfer_status_t st{};
  ASSERT_EQ(mc_te_get_transfer_status(sender, batch, 0, &st), 0);
  EXPECT_EQ(st.status, MC_TE_COMPLETED);
  EXPECT_EQ(mc_te_free_batch_id(sender, batch), 0);
  mc_te_destroy(sender);
  mc_te_destroy(target);
}

// The target is another process (the example, --notifies): it checks its
// whole buffer the moment it takes each notification and prints the result.
TEST_P(TeNotify, TargetProcessSeesTheBatchWhenItTakesTheNotification) {
  constexpr size_t kSize = 2 << 20, kTasks = 4;
  constexpr unsigned kRounds = 6;
  auto env = env_;
  for (const char* name : {"MC_IB_PROVIDER", "MC_IB_SOFT_FABRIC"}) {
    if (const char* v = std::getenv(name)) env[name] = v;
  }
  TargetProcess target;
  ASSERT_TRUE(target.start("P2PHANDSHAKE", "127.0.0.1", kSize, 1, env, false,
                           {"--notifies", std::to_string(kRounds), "--location", "cpu:0"}));
  auto sender = make_engine();
  std::vector<uint8_t> src(kSize);
  ASSERT_EQ(sender->registerLocalMemory(src.data(), kSize, "cpu:0"), 0);
  const SegmentHandle seg = sender->openSegment(target.segment());
  ASSERT_GE(seg, 0);
  for (unsigned round = 0; round < kRounds; ++round) {
    const unsigned seed = 100 + round;
    for (size_t i = 0; i < kSize; ++i) src[i] = pattern(seed, i);
    std::vector<TransferRequest> reqs;
    for (size_t t = 0; t < kTasks; ++t) {
      const size_t off = t * (kSize / kTasks);
      reqs.push_back(
          {TransferRequest::WRITE, src.data() + off, seg, target.addr() + off, kSize / kTasks});
    }
    const BatchID batch = sender->allocateBatchID(kTasks);
    ASSERT_EQ(sender->submitTransferWithNotify(
                  batch, reqs, {"r\0"s + std::to_string(round), "seed=" + std::to_string(seed)}),
              0);
    // The next round writes only once the target checked this one.
    std::optional<std::string> line = target.read_line();
    ASSERT_TRUE(line.has_value()) << "round " << round << ": " << target.log();
    EXPECT_EQ(*line, "NOTIFY sender=" + sender->getLocalIpAndPort() +
                         " name=" + std::to_string(2 + std::to_string(round).size()) + " memory=ok")
        << "round " << round;
    EXPECT_EQ(wait_batch_notify(*sender, batch), 0);
    EXPECT_EQ(sender->freeBatchID(batch), 0);
  }
  EXPECT_EQ(target.stop(), 0) << target.log();
}

INSTANTIATE_TEST_SUITE_P(Tls, TeNotify, testing::Values("tcp", "sm", "rc_verbs"),
                         [](const auto& info) { return info.param; });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(TeNotify);

// Through a metadata store (etcd, Redis, mc_metadata_server over HTTP): the
// sender's address comes from its rpc_meta key, the sender is named by its
// local_server_name.
class TeNotifyStore : public testing::TestWithParam<mc::test::Service> {};

TEST_P(TeNotifyStore, NotifiesBothWaysWithTheStoreNames) {
  mc::test::Services services;
  const std::string url = services.start(GetParam());
  ASSERT_FALSE(url.empty());
  ScopedEnv scoped({{"MC_TLS", "tcp"}, {"MC_NET_DEVICES", "lo"}, {"MC_METADATA_TIMEOUT", "3s"}});
  auto name = [] {
    auto port = ucs::find_free_tcp_port();
    EXPECT_TRUE(port.ok());
    return "127.0.0.1:" + std::to_string(port.value_or(1));
  };
  TransferEngine a, b;
  const std::string an = name(), bn = name();
  ASSERT_EQ(a.init(url, an), 0);
  ASSERT_EQ(b.init(url, bn), 0);
  std::vector<uint8_t> dst(1 << 20), src(1 << 20, 9);
  ASSERT_EQ(b.registerLocalMemory(dst.data(), dst.size(), "cpu:0"), 0);
  const SegmentHandle seg = a.openSegment(bn);
  ASSERT_GE(seg, 0);
  const BatchID batch = a.allocateBatchID(1);
  ASSERT_EQ(a.submitTransferWithNotify(batch,
                                       {{TransferRequest::WRITE, src.data(), seg,
                                         reinterpret_cast<uint64_t>(dst.data()), dst.size()}},
                                       {"store", "a->b"}),
            0);
  std::vector<ReceivedNotify> got;
  ASSERT_TRUE(wait_notifies(b, 1, &got));
  for (uint8_t v : dst) ASSERT_EQ(v, 9);
  EXPECT_EQ(got[0].sender, an);
  EXPECT_EQ(got[0].notify.notify_msg, "a->b");
  EXPECT_EQ(b.sendNotifyByName(an, {"store", "b->a"}), 0);
  got.clear();
  ASSERT_TRUE(wait_notifies(a, 1, &got));
  EXPECT_EQ(got[0].sender, bn);
  EXPECT_EQ(got[0].notify.notify_msg, "b->a");
  EXPECT_EQ(a.sendNotifyByName("no-such-segment", {"x", "y"}), static_cast<int>(Status::NoElem));
  EXPECT_EQ(wait_batch_notify(a, batch), 0);
  EXPECT_EQ(a.freeBatchID(batch), 0);
}

INSTANTIATE_TEST_SUITE_P(Store, TeNotifyStore,
                         testing::Values(mc::test::Service::Etcd, mc::test::Service::Redis,
                                         mc::test::Service::MetadataServer),
                         [](const auto& info) { return mc::test::service_name(info.param); });

}  // namespace
}  // namespace mc::te::test
