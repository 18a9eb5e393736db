// SPDX-License-Identifier: Apache-2.0
// Backend-specific behaviour against the real servers: etcd and redis leases
// (a killed writer's keys expire, a live one's do not, and come back after a
// restarted redis lost them), etcd endpoint failover, redis passwords and
// database indexes from the URL and from the knobs.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/services.h"
#include "ucp/metadata/store.h"

namespace mc::metadata::etcd_redis_test {
namespace {

using test::Service;
using test::Services;

StoreOptions options_with_ttl(int ttl_s) {
  StoreOptions o;
  o.timeout = std::chrono::milliseconds(2000);
  o.lease_ttl = std::chrono::seconds(ttl_s);
  return o;
}

std::unique_ptr<Store> open_ok(const std::string& conn, const StoreOptions& options) {
  std::string error;
  Result<std::unique_ptr<Store>> store = open_store(conn, options, &error);
  EXPECT_TRUE(store.ok()) << conn << ": " << error;
  return store.ok() ? std::move(*store) : nullptr;
}

// Polls until `key` is absent; false when it is still there after `bound`
// (a safety bound, far above the lease TTL, not a speed check).
bool wait_absent(Store& store, const std::string& key, std::chrono::seconds bound) {
  const auto deadline = std::chrono::steady_clock::now() + bound;
  while (std::chrono::steady_clock::now() < deadline) {
    if (store.get(key).status() == Status::NoElem) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return false;
}

// Restores an environment variable at the end of a test.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    const char* old = std::getenv(name);
    had_ = old != nullptr;
    if (had_) old_ = old;
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (had_) {
      setenv(name_, old_.c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  bool had_ = false;
  std::string old_;
};

TEST(MetadataEtcd, LeasedKeysOfAKilledWriterExpire) {
  Services services;
  const std::string conn = services.start_etcd();
  ASSERT_FALSE(conn.empty());
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // The writer: puts a leased key and a plain one, says so, and waits to die.
    close(ready[0]);
    std::string error;
    auto store = open_store(conn, options_with_ttl(2), &error);
    char ok = store.ok() && (*store)->put("mooncake/ram/crashed", "v", true) == Status::Ok &&
                      (*store)->put("mooncake/ram/plain", "p", false) == Status::Ok
                  ? 1
                  : 0;
    if (write(ready[1], &ok, 1) != 1) _exit(1);
    for (;;) pause();
  }
  close(ready[1]);
  char ok = 0;
  ASSERT_EQ(read(ready[0], &ok, 1), 1);
  close(ready[0]);
  ASSERT_EQ(ok, 1) << "the writer could not put its keys";
  auto store = open_ok(conn, options_with_ttl(2));
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->get("mooncake/ram/crashed").value_or(""), "v");
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  EXPECT_TRUE(wait_absent(*store, "mooncake/ram/crashed", std::chrono::seconds(30)));
  EXPECT_EQ(store->get("mooncake/ram/plain").value_or(""), "p");  // not leased: stays
}

TEST(MetadataEtcd, LiveLeaseOutlivesItsTtlAndGoesWithTheStore) {
  Services services;
  const std::string conn = services.start_etcd();
  ASSERT_FALSE(conn.empty());
  auto reader = open_ok(conn, options_with_ttl(2));
  auto writer = open_ok(conn, options_with_ttl(2));
  ASSERT_TRUE(reader && writer);
  ASSERT_EQ(writer->put("mooncake/ram/alive", "v", true), Status::Ok);
  // Three TTLs later the keep-alive thread has kept it.
  std::this_thread::sleep_for(std::chrono::seconds(6));
  EXPECT_EQ(reader->get("mooncake/ram/alive").value_or(""), "v");
  writer.reset();  // revokes the lease
  EXPECT_EQ(reader->get("mooncake/ram/alive").status(), Status::NoElem);
}

TEST(MetadataEtcd, FailsOverToTheNextEndpointAndAcceptsBareHostPort) {
  Services services;
  ASSERT_FALSE(services.start_etcd().empty());
  const std::string live = "127.0.0.1:" + std::to_string(services.port(Service::Etcd));
  const std::string dead = "127.0.0.1:1";
  auto store = open_ok("etcd://" + dead + "," + live, options_with_ttl(2));
  ASSERT_NE(store, nullptr);
  ASSERT_EQ(store->put("k", "v"), Status::Ok);
  auto bare = open_ok(live, options_with_ttl(2));
  ASSERT_NE(bare, nullptr);
  EXPECT_EQ(bare->get("k").value_or(""), "v");
  // Both dead: the error names each endpoint and its cause.
  std::string error;
  EXPECT_EQ(open_store("etcd://" + dead + ",127.0.0.1:2", options_with_ttl(2), &error).status(),
            Status::IoError);
  EXPECT_NE(error.find("no endpoint answered: etcd://127.0.0.1:1: connection refused"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("etcd://127.0.0.1:2: connection refused"), std::string::npos) << error;
}

TEST(MetadataEtcd, WatchSeesEveryChangeOfItsKeyOnly) {
  Services services;
  const std::string conn = services.start_etcd();
  ASSERT_FALSE(conn.empty());
  auto watcher = open_ok(conn, options_with_ttl(2));
  auto writer = open_ok(conn, options_with_ttl(2));
  ASSERT_TRUE(watcher && writer);
  ASSERT_TRUE(watcher->supports_watch());
  std::mutex lock;
  std::condition_variable cv;
  std::vector<std::optional<std::string>> seen;
  ASSERT_EQ(watcher->watch("mooncake/ram/w",
                           [&](const std::string& key, const std::optional<std::string>& value) {
                             EXPECT_EQ(key, "mooncake/ram/w");
                             std::lock_guard<std::mutex> guard(lock);
                             seen.push_back(value);
                             cv.notify_all();
                           }),
            Status::Ok);
  // Changes right after watch() returns are not missed.
  ASSERT_EQ(writer->put("mooncake/ram/w", "one"), Status::Ok);
  ASSERT_EQ(writer->put("mooncake/ram/other", "x"), Status::Ok);
  ASSERT_EQ(writer->put("mooncake/ram/w", std::string("t\0o", 3)), Status::Ok);
  ASSERT_EQ(writer->remove("mooncake/ram/w"), Status::Ok);
  std::unique_lock<std::mutex> guard(lock);
  // A safety bound, not a speed check.
  cv.wait_for(guard, std::chrono::seconds(30), [&] { return seen.size() >= 3; });
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[0], std::optional<std::string>("one"));
  EXPECT_EQ(seen[1], std::optional<std::string>(std::string("t\0o", 3)));
  EXPECT_EQ(seen[2], std::nullopt);
}

// The writer: a child that puts a leased key and a plain one, says so, and
// waits to die. Its pid, or -1 after a test failure.
pid_t start_writer(const std::string& conn, int ttl_s) {
  int ready[2];
  if (pipe(ready) != 0) {
    ADD_FAILURE() << "pipe";
    return -1;
  }
  const pid_t child = fork();
  if (child == 0) {
    close(ready[0]);
    std::string error;
    auto store = open_store(conn, options_with_ttl(ttl_s), &error);
    char ok = store.ok() && (*store)->put("mooncake/ram/crashed", "v", true) == Status::Ok &&
                      (*store)->put("mooncake/ram/plain", "p", false) == Status::Ok
                  ? 1
                  : 0;
    if (write(ready[1], &ok, 1) != 1) _exit(1);
    for (;;) pause();
  }
  close(ready[1]);
  char ok = 0;
  const bool said = child > 0 && read(ready[0], &ok, 1) == 1;
  close(ready[0]);
  if (!said || ok != 1) {
    ADD_FAILURE() << "the writer could not put its keys";
    if (child > 0) {
      kill(child, SIGKILL);
      waitpid(child, nullptr, 0);
    }
    return -1;
  }
  return child;
}

TEST(MetadataRedis, LeasedKeysOfAKilledWriterExpire) {
  Services services;
  const std::string conn = services.start_redis();
  ASSERT_FALSE(conn.empty());
  const pid_t child = start_writer(conn, 2);
  ASSERT_GT(child, 0);
  auto store = open_ok(conn, options_with_ttl(2));
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->get("mooncake/ram/crashed").value_or(""), "v");
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  EXPECT_TRUE(wait_absent(*store, "mooncake/ram/crashed", std::chrono::seconds(30)));
  EXPECT_EQ(store->get("mooncake/ram/plain").value_or(""), "p");  // not leased: stays
}

TEST(MetadataRedis, LiveLeaseOutlivesItsTtlAndComesBackAfterARestart) {
  Services services;
  const std::string conn = services.start_redis();
  ASSERT_FALSE(conn.empty());
  auto reader = open_ok(conn, options_with_ttl(2));
  auto writer = open_ok(conn, options_with_ttl(2));
  ASSERT_TRUE(reader && writer);
  ASSERT_EQ(writer->put("mooncake/ram/alive", "v1", true), Status::Ok);
  ASSERT_EQ(writer->put("mooncake/ram/alive", "v", true), Status::Ok);  // the last value wins
  ASSERT_EQ(writer->put("mooncake/ram/gone", "g", true), Status::Ok);
  ASSERT_EQ(writer->remove("mooncake/ram/gone"), Status::Ok);  // no longer set again
  // Three TTLs later the refresher has kept it.
  std::this_thread::sleep_for(std::chrono::seconds(6));
  EXPECT_EQ(reader->get("mooncake/ram/alive").value_or(""), "v");
  EXPECT_EQ(reader->get("mooncake/ram/gone").status(), Status::NoElem);
  // A redis without persistence restarts empty; the writer sets it again.
  services.kill(Service::Redis);
  EXPECT_NE(reader->get("mooncake/ram/alive").status(), Status::Ok);
  ASSERT_TRUE(services.restart(Service::Redis));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (reader->get("mooncake/ram/alive").value_or("") != "v" &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(reader->get("mooncake/ram/alive").value_or(""), "v");
  EXPECT_EQ(reader->get("mooncake/ram/gone").status(), Status::NoElem);
  // Without the writer the key expires.
  writer.reset();
  EXPECT_TRUE(wait_absent(*reader, "mooncake/ram/alive", std::chrono::seconds(30)));
}

TEST(MetadataRedis, WatchIsUnsupported) {
  Services services;
  const std::string conn = services.start_redis();
  ASSERT_FALSE(conn.empty());
  auto store = open_ok(conn, options_with_ttl(0));
  ASSERT_NE(store, nullptr);
  EXPECT_FALSE(store->supports_watch());
  EXPECT_EQ(store->watch("k", [](const std::string&, const std::optional<std::string>&) {}),
            Status::Unsupported);
}

TEST(MetadataRedis, PasswordFromUrlOrKnob) {
  Services services;
  const std::string conn = services.start_redis("s3cr:et");
  ASSERT_FALSE(conn.empty());
  const std::string hostport = conn.substr(std::string("redis://").size());
  std::string error;
  EXPECT_EQ(open_store(conn, options_with_ttl(0), &error).status(), Status::Rejected);
  EXPECT_NE(error.find("NOAUTH"), std::string::npos) << error;
  EXPECT_EQ(open_store("redis://:wrong@" + hostport, options_with_ttl(0), &error).status(),
            Status::Rejected);
  EXPECT_NE(error.find("AUTH failed"), std::string::npos) << error;
  EXPECT_EQ(error.find("wrong"), std::string::npos) << "the password leaked: " << error;
  auto store = open_ok("redis://:s3cr%3Aet@" + hostport, options_with_ttl(0));
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->url(), conn);  // shown without the password
  ASSERT_EQ(store->put("k", "v"), Status::Ok);
  ScopedEnv password("MC_REDIS_PASSWORD", "s3cr:et");
  auto by_knob = open_ok(conn, options_with_ttl(0));
  ASSERT_NE(by_knob, nullptr);
  EXPECT_EQ(by_knob->get("k").value_or(""), "v");
}

TEST(MetadataRedis, DatabaseIndexFromUrlOrKnob) {
  Services services;
  const std::string conn = services.start_redis();
  ASSERT_FALSE(conn.empty());
  auto db1 = open_ok(conn + "/1", options_with_ttl(0));
  auto db2 = open_ok(conn + "/2", options_with_ttl(0));
  auto db0 = open_ok(conn, options_with_ttl(0));
  ASSERT_TRUE(db1 && db2 && db0);
  ASSERT_EQ(db1->put("k", "one"), Status::Ok);
  EXPECT_EQ(db2->get("k").status(), Status::NoElem);
  EXPECT_EQ(db0->get("k").status(), Status::NoElem);
  EXPECT_EQ(db1->get("k").value_or(""), "one");
  {
    ScopedEnv index("MC_REDIS_DB_INDEX", "1");
    auto by_knob = open_ok(conn, options_with_ttl(0));
    ASSERT_NE(by_knob, nullptr);
    EXPECT_EQ(by_knob->get("k").value_or(""), "one");
  }
  std::string error;
  {
    ScopedEnv index("MC_REDIS_DB_INDEX", "many");
    EXPECT_EQ(open_store(conn, options_with_ttl(0), &error).status(), Status::InvalidParam);
    EXPECT_NE(error.find("MC_REDIS_DB_INDEX"), std::string::npos) << error;
  }
  EXPECT_EQ(open_store(conn + "/x", options_with_ttl(0), &error).status(), Status::InvalidParam);
  EXPECT_NE(error.find("bad database index"), std::string::npos) << error;
  EXPECT_EQ(open_store(conn + "/99999", options_with_ttl(0), &error).status(), Status::Rejected);
  EXPECT_NE(error.find("SELECT 99999 failed"), std::string::npos) << error;
}

}  // namespace
}  // namespace mc::metadata::etcd_redis_test
