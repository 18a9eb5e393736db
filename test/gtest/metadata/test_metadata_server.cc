// SPDX-License-Identifier: Apache-2.0
// mc_metadata_server over raw HTTP: the answers of GET/PUT/DELETE and
// /health, keep-alive, and malformed or oversized requests answered with a
// status and the reason.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "common/services.h"

namespace mc::test {
namespace {

class MetadataServerTest : public testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(services_.start_metadata_server().empty());
    port_ = services_.port(Service::MetadataServer);
  }
  Services services_;
  uint16_t port_ = 0;
};

TEST_F(MetadataServerTest, HealthAndKeys) {
  std::string body;
  EXPECT_EQ(http_request(port_, "GET", "/health", "", &body), 200);
  EXPECT_EQ(http_request(port_, "GET", "/metadata?key=a%20b", "", &body), 404);
  EXPECT_EQ(body, "metadata not found\n");
  EXPECT_EQ(http_request(port_, "PUT", "/metadata?key=a%20b", std::string("v\0\xff", 3), &body),
            200);
  EXPECT_EQ(http_request(port_, "GET", "/metadata?key=a+b", "", &body), 200);  // '+' is a space
  EXPECT_EQ(body, std::string("v\0\xff", 3));
  EXPECT_EQ(http_request(port_, "DELETE", "/metadata?key=a%20b", "", &body), 200);
  EXPECT_EQ(http_request(port_, "DELETE", "/metadata?key=a%20b", "", &body), 404);
  EXPECT_EQ(http_request(port_, "GET", "/metadata?key=a%20b", "", &body), 404);
}

TEST_F(MetadataServerTest, BadRequestsGetAStatusAndAReason) {
  std::string body;
  EXPECT_EQ(http_request(port_, "GET", "/metadata", "", &body), 400);
  EXPECT_EQ(body, "missing key parameter: use /metadata?key=<key>\n");
  EXPECT_EQ(http_request(port_, "GET", "/metadata?key=%zz", "", &body), 400);
  EXPECT_EQ(body, "malformed percent-escape in the query\n");
  EXPECT_EQ(http_request(port_, "PATCH", "/metadata?key=a", "", &body), 405);
  EXPECT_EQ(http_request(port_, "GET", "/other", "", &body), 404);
  EXPECT_EQ(http_request(port_, "POST", "/health", "", &body), 405);
  std::string reply = raw_exchange(port_, "GARBAGE\r\n\r\n");
  EXPECT_EQ(reply.rfind("HTTP/1.1 400 Bad Request\r\n", 0), 0u) << reply;
  EXPECT_NE(reply.find("malformed request line"), std::string::npos) << reply;
  reply = raw_exchange(port_, "GET /health HTTP/2.0\r\n\r\n");
  EXPECT_EQ(reply.rfind("HTTP/1.1 505 ", 0), 0u) << reply;
  reply =
      raw_exchange(port_, "PUT /metadata?key=a HTTP/1.1\r\nContent-Length: 99999999999\r\n\r\n");
  EXPECT_EQ(reply.rfind("HTTP/1.1 413 ", 0), 0u) << reply;
  EXPECT_NE(reply.find("exceeds the limit of 67108864"), std::string::npos) << reply;
  reply = raw_exchange(port_, "PUT /metadata?key=a HTTP/1.1\r\nContent-Length: 1x\r\n\r\n");
  EXPECT_EQ(reply.rfind("HTTP/1.1 400 ", 0), 0u) << reply;
  reply = raw_exchange(port_, "PUT /metadata?key=a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n");
  EXPECT_EQ(reply.rfind("HTTP/1.1 501 ", 0), 0u) << reply;
  reply = raw_exchange(port_, "GET /health HTTP/1.1\r\nX: " + std::string(70000, 'a'));
  EXPECT_EQ(reply.rfind("HTTP/1.1 431 ", 0), 0u) << reply.substr(0, 100);
  // The server still serves after all of that.
  EXPECT_EQ(http_request(port_, "GET", "/health", "", &body), 200);
}

TEST_F(MetadataServerTest, KeepAliveServesSeveralRequestsOnOneConnection) {
  const std::string two =
      "PUT /metadata?key=k HTTP/1.1\r\nContent-Length: 2\r\n\r\nhi"
      "GET /metadata?key=k HTTP/1.1\r\nConnection: close\r\n\r\n";
  const std::string reply = raw_exchange(port_, two);
  EXPECT_EQ(reply.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << reply;
  const size_t second = reply.find("HTTP/1.1 200 OK\r\n", 1);
  ASSERT_NE(second, std::string::npos) << reply;
  EXPECT_EQ(reply.substr(reply.size() - 2), "hi");
}

TEST(MetadataServerTool, RefusesBadOptionsAndBusyPorts) {
  Services services;
  ASSERT_FALSE(services.start_metadata_server().empty());
  const std::string bin = metadata_server_path();
  const std::string port = std::to_string(services.port(Service::MetadataServer));
  EXPECT_NE(std::system((bin + " --port 70000 2>/dev/null").c_str()), 0);
  EXPECT_NE(std::system((bin + " --bogus 2>/dev/null").c_str()), 0);
  const std::string out = services.dir() + "/busy.txt";
  EXPECT_NE(std::system((bin + " --port " + port + " 2>" + out).c_str()), 0);
  EXPECT_EQ(std::system(
                ("grep -q 'cannot listen on 127.0.0.1:" + port + ": Address already in use' " + out)
                    .c_str()),
            0);
  EXPECT_EQ(std::system((bin + " --help >/dev/null").c_str()), 0);
}

}  // namespace
}  // namespace mc::test
