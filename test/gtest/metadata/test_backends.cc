// SPDX-License-Identifier: Apache-2.0
// Every metadata backend against its real server (etcd, redis-server,
// mc_metadata_server) started by the Services fixture: put / get / remove,
// values with every byte, malformed stored values, a server stopped and
// restarted, and unreachable or silent servers failing within the bound.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include "common/services.h"
#include "ucp/metadata/descriptors.h"
#include "ucp/metadata/store.h"

namespace mc::metadata {
namespace {

using test::Service;
using test::Services;

StoreOptions short_options() {
  StoreOptions o;
  o.timeout = std::chrono::milliseconds(2000);
  o.lease_ttl = std::chrono::seconds(2);
  return o;
}

std::unique_ptr<Store> open_ok(const std::string& conn,
                               const StoreOptions& options = short_options()) {
  std::string error;
  Result<std::unique_ptr<Store>> store = open_store(conn, options, &error);
  EXPECT_TRUE(store.ok()) << conn << ": " << error;
  return store.ok() ? std::move(*store) : nullptr;
}

// A port with a listening socket that never accepts nor answers: connections
// complete (the kernel's backlog) and then nothing comes back.
class SilentServer {
 public:
  SilentServer() {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    EXPECT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    EXPECT_EQ(listen(fd_, 16), 0);
    EXPECT_EQ(getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len), 0);
    port_ = ntohs(addr.sin_port);
  }
  ~SilentServer() { close(fd_); }
  uint16_t port() const { return port_; }

 private:
  int fd_ = -1;
  uint16_t port_ = 0;
};

// A port where nothing listens (bound to reserve it, never listening).
uint16_t closed_port() {
  static int fd = -1;
  if (fd < 0) {
    fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  }
  sockaddr_in addr{};
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  return ntohs(addr.sin_port);
}

struct Backend {
  const char* name;
  Service service;
  std::string (*conn_for_port)(uint16_t port);
};

void PrintTo(const Backend& b, std::ostream* os) {
  *os << b.name;
}

class MetadataBackend : public testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    conn_ = services_.start(GetParam().service);
    ASSERT_FALSE(conn_.empty());
    store_ = open_ok(conn_);
    ASSERT_NE(store_, nullptr);
  }

  Services services_;
  std::string conn_;
  std::unique_ptr<Store> store_;
};

TEST_P(MetadataBackend, PutGetRemoveAndAbsentKeys) {
  EXPECT_EQ(store_->get("mooncake/ram/absent").status(), Status::NoElem);
  ASSERT_EQ(store_->put("mooncake/ram/a", "one"), Status::Ok);
  Result<std::string> v = store_->get("mooncake/ram/a");
  ASSERT_TRUE(v.ok()) << store_->last_error();
  EXPECT_EQ(*v, "one");
  ASSERT_EQ(store_->put("mooncake/ram/a", "two"), Status::Ok);
  EXPECT_EQ(store_->get("mooncake/ram/a").value_or(""), "two");
  ASSERT_EQ(store_->put("mooncake/ram/empty", ""), Status::Ok);
  v = store_->get("mooncake/ram/empty");
  ASSERT_TRUE(v.ok()) << store_->last_error();
  EXPECT_EQ(*v, "");
  EXPECT_EQ(store_->remove("mooncake/ram/a"), Status::Ok);
  EXPECT_EQ(store_->get("mooncake/ram/a").status(), Status::NoElem);
  EXPECT_EQ(store_->remove("mooncake/ram/a"), Status::Ok);  // absent: still Ok
  EXPECT_EQ(store_->url(), conn_);
}

TEST_P(MetadataBackend, ValuesWithEveryByteAndOddKeys) {
  std::string value;
  for (int round = 0; round < 4; ++round) {
    for (int c = 0; c < 256; ++c) value.push_back(static_cast<char>(c));
  }
  const std::string key = "mooncake/ram/host name&x=y?z#%2F+\xc3\xa9";
  ASSERT_EQ(store_->put(key, value), Status::Ok) << store_->last_error();
  Result<std::string> back = store_->get(key);
  ASSERT_TRUE(back.ok()) << store_->last_error();
  EXPECT_EQ(*back, value);
  EXPECT_EQ(store_->get("mooncake/ram/host name").status(), Status::NoElem);
  // Under etcd's default request limit (1.5 MiB) once in base64.
  const std::string big(1 << 20, 'x');
  ASSERT_EQ(store_->put("mooncake/ram/big", big), Status::Ok) << store_->last_error();
  EXPECT_EQ(store_->get("mooncake/ram/big").value_or(""), big);
}

TEST_P(MetadataBackend, DescriptorRoundTripAndMalformedStoredValue) {
  SegmentDesc seg;
  seg.server_name = "node1:15001";
  seg.buffers.push_back({"cpu:0", 0xffffffffffff0000ull, 4096, {1, 2, 3}});
  const std::string key = ram_key("mooncake", seg.server_name);
  ASSERT_EQ(store_->put(key, encode(seg)), Status::Ok);
  Result<std::string> text = store_->get(key);
  ASSERT_TRUE(text.ok());
  std::string error;
  Result<SegmentDesc> back = decode_segment(*text, &error);
  ASSERT_TRUE(back.ok()) << error;
  EXPECT_EQ(back->buffers.at(0).addr, 0xffffffffffff0000ull);
  // Someone else wrote garbage under the key: a decode error, not a crash.
  ASSERT_EQ(store_->put(key, std::string("{\"server_name\":\"x\",") + '\0' + '\xff'), Status::Ok);
  text = store_->get(key);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(decode_segment(*text, &error).status(), Status::BadData);
  EXPECT_NE(error.find("not valid JSON"), std::string::npos) << error;
}

TEST_P(MetadataBackend, ServerStoppedThenRestarted) {
  ASSERT_EQ(store_->put("mooncake/rpc_meta/n", "v"), Status::Ok);
  services_.stop(GetParam().service);
  Result<std::string> v = store_->get("mooncake/rpc_meta/n");
  EXPECT_TRUE(v.status() == Status::IoError || v.status() == Status::Timeout) << v.status();
  const std::string port = std::to_string(services_.port(GetParam().service));
  EXPECT_NE(store_->last_error().find("127.0.0.1:" + port), std::string::npos)
      << store_->last_error();
  EXPECT_EQ(store_->put("mooncake/rpc_meta/n", "w"), v.status());
  ASSERT_TRUE(services_.restart(GetParam().service));
  // The same store works again; etcd kept its data, the others start empty.
  ASSERT_EQ(store_->put("mooncake/rpc_meta/m", "x"), Status::Ok) << store_->last_error();
  EXPECT_EQ(store_->get("mooncake/rpc_meta/m").value_or(""), "x");
  if (GetParam().service == Service::Etcd) {
    EXPECT_EQ(store_->get("mooncake/rpc_meta/n").value_or(""), "v");
  }
}

TEST_P(MetadataBackend, UnreachableServerFailsNamingUrlAndCause) {
  const std::string conn = GetParam().conn_for_port(closed_port());
  std::string error;
  Result<std::unique_ptr<Store>> store = open_store(conn, short_options(), &error);
  EXPECT_EQ(store.status(), Status::IoError) << error;
  EXPECT_NE(error.find(conn + ": connection refused"), std::string::npos) << error;
}

TEST_P(MetadataBackend, SilentServerFailsWithTimeout) {
  SilentServer silent;
  const std::string conn = GetParam().conn_for_port(silent.port());
  StoreOptions options = short_options();
  options.timeout = std::chrono::milliseconds(300);
  std::string error;
  Result<std::unique_ptr<Store>> store = open_store(conn, options, &error);
  EXPECT_EQ(store.status(), Status::Timeout) << error;
  EXPECT_NE(error.find("127.0.0.1:" + std::to_string(silent.port())), std::string::npos) << error;
  EXPECT_NE(error.find("no answer within 300 ms"), std::string::npos) << error;
}

// put_if and remove_if: set only while absent or unchanged, what was found
// when not, atomic on the server (racing writers: exactly one wins each key).
TEST_P(MetadataBackend, CompareAndSetSetsOnlyWhileAbsentOrUnchanged) {
  const std::string key = "mooncake/rpc_meta/cas";
  std::optional<std::string> found;
  ASSERT_EQ(store_->put_if(key, "a", std::nullopt, false, &found), Status::Ok)
      << store_->last_error();
  EXPECT_EQ(store_->put_if(key, "b", std::nullopt, false, &found), Status::Exists);
  EXPECT_EQ(found.value_or("(none)"), "a");
  found.reset();
  EXPECT_EQ(store_->put_if(key, "b", std::string("not a"), false, &found), Status::Exists);
  EXPECT_EQ(found.value_or("(none)"), "a");
  EXPECT_EQ(store_->put_if(key, "b", std::string("a"), false, &found), Status::Ok);
  EXPECT_EQ(store_->get(key).value_or(""), "b");
  EXPECT_EQ(store_->remove_if(key, "a"), Status::Exists);
  EXPECT_EQ(store_->get(key).value_or(""), "b") << "removed while holding another value";
  EXPECT_EQ(store_->remove_if(key, "b"), Status::Ok);
  EXPECT_EQ(store_->get(key).status(), Status::NoElem);
  EXPECT_EQ(store_->remove_if(key, "b"), Status::Ok) << "absent: Ok";
  EXPECT_EQ(store_->put_if(key, "c", std::string("b"), false, &found), Status::NoElem);
  EXPECT_FALSE(found.has_value());
  EXPECT_EQ(store_->get(key).status(), Status::NoElem);

  // Two stores race to create the same keys: one wins each, the loser is
  // told the winner's value, and the value stays the winner's.
  std::unique_ptr<Store> other = open_ok(conn_);
  ASSERT_NE(other, nullptr);
  constexpr int kKeys = 40;
  std::vector<Status> mine(kKeys), theirs(kKeys);
  std::vector<std::optional<std::string>> mine_found(kKeys), their_found(kKeys);
  std::thread racer([&] {
    for (int i = 0; i < kKeys; ++i) {
      theirs[i] = other->put_if("race/" + std::to_string(i), "theirs", std::nullopt, false,
                                &their_found[i]);
    }
  });
  for (int i = 0; i < kKeys; ++i) {
    mine[i] = store_->put_if("race/" + std::to_string(i), "mine", std::nullopt, false,
                             &mine_found[i]);
  }
  racer.join();
  for (int i = 0; i < kKeys; ++i) {
    ASSERT_TRUE((mine[i] == Status::Ok) != (theirs[i] == Status::Ok))
        << "key " << i << ": " << mine[i] << " and " << theirs[i];
    const std::string winner = mine[i] == Status::Ok ? "mine" : "theirs";
    EXPECT_EQ((mine[i] == Status::Ok ? their_found[i] : mine_found[i]).value_or(""), winner) << i;
    EXPECT_EQ(store_->get("race/" + std::to_string(i)).value_or(""), winner) << i;
  }
}

// A leased key that another writer set is that writer's: the store's lease
// keeping (redis sets its leased keys again every third of the TTL; etcd
// puts them again on a new lease) leaves it alone.
TEST_P(MetadataBackend, LeaseKeepingNeverOverwritesAnotherWriter) {
  if (GetParam().service == Service::MetadataServer) GTEST_SKIP() << "http has no leases";
  const std::string key = "mooncake/ram/leased";
  ASSERT_EQ(store_->put_if(key, "first", std::nullopt, true, nullptr), Status::Ok);
  ASSERT_TRUE(store_->has_leases());
  std::unique_ptr<Store> other = open_ok(conn_);
  ASSERT_NE(other, nullptr);
  ASSERT_EQ(other->put(key, "second", false), Status::Ok);
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));  // the TTL, 2 s
  EXPECT_EQ(other->get(key).value_or("(none)"), "second");
  EXPECT_EQ(store_->remove_if(key, "first"), Status::Exists);
  EXPECT_EQ(other->get(key).value_or("(none)"), "second");
}

// A value longer than StoreOptions::max_value is refused, naming the knob.
TEST_P(MetadataBackend, ValuesOverTheBoundAreRefused) {
  ASSERT_EQ(store_->put("mooncake/ram/big", std::string(64 * 1024, 'x')), Status::Ok);
  StoreOptions small = short_options();
  small.max_value = 4096;
  std::unique_ptr<Store> bounded = open_ok(conn_, small);
  ASSERT_NE(bounded, nullptr);
  EXPECT_EQ(bounded->get("mooncake/ram/big").status(), Status::MessageTruncated);
  EXPECT_NE(bounded->last_error().find("MC_METADATA_MAX_VALUE"), std::string::npos)
      << bounded->last_error();
  ASSERT_EQ(store_->put("mooncake/ram/small", "fits"), Status::Ok);
  EXPECT_EQ(bounded->get("mooncake/ram/small").value_or(""), "fits");
}

std::string etcd_conn(uint16_t port) {
  return "etcd://127.0.0.1:" + std::to_string(port);
}
std::string redis_conn(uint16_t port) {
  return "redis://127.0.0.1:" + std::to_string(port);
}
std::string http_conn(uint16_t port) {
  return "http://127.0.0.1:" + std::to_string(port) + "/metadata";
}

INSTANTIATE_TEST_SUITE_P(All, MetadataBackend,
                         testing::Values(Backend{"etcd", Service::Etcd, etcd_conn},
                                         Backend{"redis", Service::Redis, redis_conn},
                                         Backend{"http", Service::MetadataServer, http_conn}),
                         [](const testing::TestParamInfo<Backend>& info) {
                           return std::string(info.param.name);
                         });

}  // namespace
}  // namespace mc::metadata
