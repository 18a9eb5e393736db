// SPDX-License-Identifier: Apache-2.0
// The real-services fixture itself: each service starts and answers, stops
// (refuses connections), restarts on the same port with its data, and a
// missing binary is a failure naming it.
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "common/services.h"

namespace mc::test {
namespace {

TEST(Services, EtcdStartsStopsAndRestartsWithItsData) {
  Services services;
  const std::string url = services.start_etcd();
  ASSERT_FALSE(url.empty());
  EXPECT_EQ(url, "etcd://127.0.0.1:" + std::to_string(services.port(Service::Etcd)));
  const std::string target = "/v3/kv/put";
  std::string body;
  // key "a" = value "b", base64.
  ASSERT_EQ(http_request(services.port(Service::Etcd), "POST", target,
                         R"({"key":"YQ==","value":"Yg=="})", &body),
            200)
      << body;
  services.stop(Service::Etcd);
  EXPECT_FALSE(services.running(Service::Etcd));
  EXPECT_EQ(http_request(services.port(Service::Etcd), "GET", "/health", "", &body, 500), 0);
  ASSERT_TRUE(services.restart(Service::Etcd));
  ASSERT_EQ(http_request(services.port(Service::Etcd), "POST", "/v3/kv/range", R"({"key":"YQ=="})",
                         &body),
            200);
  EXPECT_NE(body.find("\"value\":\"Yg==\""), std::string::npos) << body;
}

TEST(Services, RedisWithAndWithoutPassword) {
  Services services;
  const std::string url = services.start_redis("s3cret");
  ASSERT_FALSE(url.empty());
  EXPECT_EQ(url, "redis://127.0.0.1:" + std::to_string(services.port(Service::Redis)));
  EXPECT_EQ(services.start_redis("s3cret"), url);  // already running: the same
  services.kill(Service::Redis);
  EXPECT_FALSE(services.running(Service::Redis));
  ASSERT_TRUE(services.restart(Service::Redis));
  EXPECT_TRUE(services.running(Service::Redis));
}

TEST(Services, MissingBinaryIsAFailureNamingIt) {
  const char* old_path = std::getenv("PATH");
  const std::string saved = old_path ? old_path : "";
  Services services;
  setenv("PATH", services.dir().c_str(), 1);
  std::string url = "unset";
  EXPECT_NONFATAL_FAILURE(url = services.start_etcd(), "the etcd binary is missing");
  EXPECT_EQ(url, "");
  EXPECT_NONFATAL_FAILURE(url = services.start_redis(), "the redis-server binary is missing");
  setenv("PATH", saved.c_str(), 1);
  EXPECT_EQ(Services::find_binary("mc-no-such-binary"), "");
  EXPECT_NONFATAL_FAILURE(services.restart(Service::MetadataServer), "was never started");
}

}  // namespace
}  // namespace mc::test
