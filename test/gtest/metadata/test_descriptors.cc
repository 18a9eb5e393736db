// SPDX-License-Identifier: Apache-2.0
// Metadata descriptors: keys, round trips with 64-bit addresses and binary
// rkeys, and every malformed value refused with the field named.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string>

#include "ucp/metadata/config.h"
#include "ucp/metadata/descriptors.h"
#include "ucp/metadata/store.h"

namespace mc::metadata {
namespace {

SegmentDesc sample_segment() {
  SegmentDesc s;
  s.server_name = "node1:15001";
  s.devices = {{"tcp:lo"}, {"sm:memory"}};
  s.priority_matrix["cpu:0"] = {{"tcp:lo"}, {"sm:memory"}};
  s.priority_matrix["cuda:1"] = {{}, {"tcp:lo"}};
  BufferDesc b;
  b.name = "cpu:0";
  b.addr = 0x7fffdeadbeef0000ull;
  b.length = 1 << 20;
  for (int i = 0; i < 256; ++i) b.rkey.push_back(static_cast<uint8_t>(i));
  s.buffers.push_back(b);
  b.addr = std::numeric_limits<uint64_t>::max() - 10;
  b.length = 10;
  b.rkey.clear();
  s.buffers.push_back(b);
  s.worker_address = {0x00, 0xff, 0x10, 0x80};
  s.generation = std::numeric_limits<uint64_t>::max();
  return s;
}

void expect_same(const SegmentDesc& a, const SegmentDesc& b) {
  EXPECT_EQ(a.server_name, b.server_name);
  EXPECT_EQ(a.protocol, b.protocol);
  ASSERT_EQ(a.devices.size(), b.devices.size());
  for (size_t i = 0; i < a.devices.size(); ++i) EXPECT_EQ(a.devices[i].name, b.devices[i].name);
  EXPECT_EQ(a.priority_matrix, b.priority_matrix);
  ASSERT_EQ(a.buffers.size(), b.buffers.size());
  for (size_t i = 0; i < a.buffers.size(); ++i) {
    EXPECT_EQ(a.buffers[i].name, b.buffers[i].name);
    EXPECT_EQ(a.buffers[i].addr, b.buffers[i].addr);
    EXPECT_EQ(a.buffers[i].length, b.buffers[i].length);
    EXPECT_EQ(a.buffers[i].rkey, b.buffers[i].rkey);
  }
  EXPECT_EQ(a.worker_address, b.worker_address);
  EXPECT_EQ(a.generation, b.generation);
}

std::string segment_error(const std::string& json) {
  std::string error;
  auto r = decode_segment(json, &error);
  EXPECT_EQ(r.status(), ucs::Status::BadData) << json;
  return error;
}

TEST(MetadataKeys, DocumentShape) {
  EXPECT_EQ(rpc_meta_key("mooncake", "node1"), "mooncake/rpc_meta/node1");
  EXPECT_EQ(ram_key("mooncake", "node1:15001"), "mooncake/ram/node1:15001");
  EXPECT_EQ(nvmeof_key("p/q", "seg"), "p/q/nvmeof/seg");
  EXPECT_EQ(ram_key("", "seg"), "ram/seg");
}

TEST(MetadataDescriptors, RpcMetaRoundTripAndErrors) {
  RpcMeta m{"10.0.0.1", 15001};
  const std::string text = encode(m);
  EXPECT_EQ(text, R"({"ip_or_host_name":"10.0.0.1","rpc_port":15001})");
  std::string error;
  auto back = decode_rpc_meta(text, &error);
  ASSERT_TRUE(back.ok()) << error;
  EXPECT_EQ(back->ip_or_host_name, "10.0.0.1");
  EXPECT_EQ(back->rpc_port, 15001);
  EXPECT_EQ(decode_rpc_meta(R"({"ip_or_host_name":"h","rpc_port":70000})", &error).status(),
            ucs::Status::BadData);
  EXPECT_EQ(error, "rpc meta: field rpc_port: 70000 is larger than 65535");
  EXPECT_FALSE(decode_rpc_meta(R"({"ip_or_host_name":"h","rpc_port":0})", &error).ok());
  EXPECT_EQ(error, "rpc meta: field rpc_port: 0 is not a port");
  EXPECT_FALSE(decode_rpc_meta(R"({"rpc_port":1})", &error).ok());
  EXPECT_EQ(error, "rpc meta: field ip_or_host_name: missing");
  EXPECT_FALSE(decode_rpc_meta(R"({"ip_or_host_name":"","rpc_port":1})", &error).ok());
  EXPECT_EQ(error, "rpc meta: field ip_or_host_name: empty");
  EXPECT_FALSE(decode_rpc_meta(R"({"ip_or_host_name":"h","rpc_port":"1"})", &error).ok());
  EXPECT_EQ(error, "rpc meta: field rpc_port: expected an unsigned integer, got string");
  EXPECT_FALSE(decode_rpc_meta("[1]", &error).ok());
  EXPECT_EQ(error, "rpc meta: expected an object, got array");
  EXPECT_FALSE(decode_rpc_meta("{\"ip_or", &error).ok());
  EXPECT_EQ(error.rfind("rpc meta: not valid JSON: offset ", 0), 0u) << error;
}

TEST(MetadataDescriptors, SegmentRoundTripKeepsEveryBit) {
  const SegmentDesc s = sample_segment();
  const std::string text = encode(s);
  std::string error;
  auto back = decode_segment(text, &error);
  ASSERT_TRUE(back.ok()) << error;
  expect_same(s, *back);
  EXPECT_NE(text.find("\"addr\":9223335399692107776,"), std::string::npos) << text;
  EXPECT_NE(text.find("\"worker_address\":\"00ff1080\""), std::string::npos) << text;
  // An empty segment round-trips too.
  SegmentDesc empty;
  empty.server_name = "x";
  auto e = decode_segment(encode(empty), &error);
  ASSERT_TRUE(e.ok()) << error;
  expect_same(empty, *e);
}

TEST(MetadataDescriptors, SegmentErrorsNameTheField) {
  const std::string good = encode(sample_segment());
  auto replace = [&](const std::string& from, const std::string& to) {
    std::string s = good;
    const size_t at = s.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return s.replace(at, from.size(), to);
  };
  EXPECT_EQ(segment_error(replace("\"server_name\":\"node1:15001\"", "\"server_name\":7")),
            "segment descriptor: field server_name: expected string, got unsigned integer");
  EXPECT_EQ(segment_error(replace("\"addr\":9223335399692107776", "\"addr\":-1")),
            "segment descriptor: field buffers[0].addr: expected an unsigned integer, got "
            "negative integer");
  EXPECT_EQ(segment_error(replace("\"length\":10,", "\"length\":11,")),
            "segment descriptor: field buffers[1]: addr + length wraps around the address space");
  EXPECT_EQ(segment_error(replace("\"rkey\":\"0001", "\"rkey\":\"0g01")),
            "segment descriptor: field buffers[0].rkey: not a hex digit at position 1");
  EXPECT_EQ(segment_error(replace("\"worker_address\":\"00ff1080\"", "\"worker_address\":\"0\"")),
            "segment descriptor: field worker_address: odd number of hex digits");
  EXPECT_EQ(segment_error(replace("\"devices\":[", "\"devices\":[3,")),
            "segment descriptor: field devices[0]: expected object, got unsigned integer");
  EXPECT_EQ(segment_error(replace("\"cpu:0\":[[\"tcp:lo\"],[\"sm:memory\"]]", "\"cpu:0\":[[]]")),
            "segment descriptor: field priority_matrix.cpu:0: expected [preferred devices, "
            "secondary devices], got 1 lists");
  EXPECT_EQ(segment_error(replace("[\"sm:memory\"]]", "[1]]")),
            "segment descriptor: field priority_matrix.cpu:0[1][0]: expected string, got "
            "unsigned integer");
  EXPECT_EQ(segment_error(replace(",\"generation\":18446744073709551615", "")),
            "segment descriptor: field generation: missing");
  EXPECT_EQ(segment_error(replace("\"buffers\":[", "\"buffers\":{\"a\":["))
                .rfind("segment descriptor: not valid JSON", 0),
            0u);
  EXPECT_EQ(segment_error("\"just a string\""),
            "segment descriptor: expected an object, got string");
}

TEST(MetadataDescriptors, EveryTruncationOfASegmentIsAnError) {
  const std::string good = encode(sample_segment());
  for (size_t n = 0; n < good.size(); ++n) {
    std::string error;
    EXPECT_EQ(decode_segment(good.substr(0, n), &error).status(), ucs::Status::BadData) << n;
    EXPECT_FALSE(error.empty());
  }
}

TEST(MetadataDescriptors, FileSegmentRoundTripAndErrors) {
  FileSegmentDesc f;
  f.server_name = "storage1";
  f.buffers.push_back(
      {uint64_t{1} << 40, "/dev/nvme0n1", {{"host-a", "/mnt/a"}, {"host-b", "/b"}}});
  std::string error;
  auto back = decode_file_segment(encode(f), &error);
  ASSERT_TRUE(back.ok()) << error;
  EXPECT_EQ(back->server_name, "storage1");
  EXPECT_EQ(back->protocol, "nvmeof");
  ASSERT_EQ(back->buffers.size(), 1u);
  EXPECT_EQ(back->buffers[0].length, uint64_t{1} << 40);
  EXPECT_EQ(back->buffers[0].file_path, "/dev/nvme0n1");
  EXPECT_EQ(back->buffers[0].local_path_map, f.buffers[0].local_path_map);
  EXPECT_FALSE(
      decode_file_segment(R"({"server_name":"s","protocol":"nvmeof","buffers":[{"length":1,)"
                          R"("file_path":"/f","local_path_map":{"h":2}}]})",
                          &error)
          .ok());
  EXPECT_EQ(error,
            "file segment descriptor: field buffers[0].local_path_map.h: expected string, got "
            "unsigned integer");
}

TEST(MetadataStore, ConnectionStrings) {
  EXPECT_TRUE(is_p2p("P2PHANDSHAKE"));
  EXPECT_TRUE(is_p2p("p2phandshake"));
  EXPECT_FALSE(is_p2p("P2PHANDSHAKEX"));
  EXPECT_EQ(backend_of("http://127.0.0.1:8080/metadata"), "http");
  EXPECT_EQ(backend_of("etcd://h1:2379,h2:2379"), "etcd");
  EXPECT_EQ(backend_of("127.0.0.1:2379"), "etcd");
  EXPECT_EQ(backend_of("h1:2379,h2:2380"), "etcd");
  EXPECT_EQ(backend_of("redis://:pw@host:6379/2"), "redis");
  EXPECT_EQ(backend_of("P2PHANDSHAKE"), "");
  EXPECT_EQ(backend_of("ftp://x"), "");
  EXPECT_EQ(backend_of("host"), "");
  EXPECT_EQ(backend_of("host:port"), "");
}

TEST(MetadataStore, OpenRefusesWhatNoBackendUnderstands) {
  std::string error;
  EXPECT_EQ(open_store("ftp://x/y", StoreOptions{}, &error).status(), ucs::Status::InvalidParam);
  EXPECT_NE(error.find("\"ftp://x/y\" is not a metadata connection string"), std::string::npos)
      << error;
  EXPECT_EQ(open_store("P2PHANDSHAKE", StoreOptions{}, &error).status(), ucs::Status::InvalidParam);
  EXPECT_NE(error.find("P2PHANDSHAKE has no store"), std::string::npos) << error;
}

// The knobs every backend shares: one meaning for 0 (a timeout of 0 is
// refused everywhere, not "no bound" for one backend and a failure for
// another), and no silent rounding of a lease.
TEST(MetadataConfig, ZeroTimeoutAndFractionalLeaseAreRefusedNamingTheKnob) {
  auto read_with = [](const char* name, const char* value, std::string* error) {
    setenv(name, value, 1);
    ucs::Result<MetadataConfig> c = read_metadata_config(error);
    unsetenv(name);
    return c;
  };
  std::string error;
  EXPECT_EQ(read_with("MC_METADATA_TIMEOUT", "0", &error).status(), ucs::Status::InvalidParam);
  EXPECT_NE(error.find("MC_METADATA_TIMEOUT"), std::string::npos) << error;
  EXPECT_EQ(read_with("MC_ETCD_LEASE_TTL", "1.5s", &error).status(), ucs::Status::InvalidParam);
  EXPECT_NE(error.find("MC_ETCD_LEASE_TTL: 1.5 s is not a whole number of seconds"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("give 1s or 2s"), std::string::npos) << error;
  ucs::Result<MetadataConfig> c = read_with("MC_ETCD_LEASE_TTL", "3s", &error);
  ASSERT_TRUE(c.ok()) << error;
  EXPECT_EQ(store_options(*c).lease_ttl, std::chrono::seconds(3));
  c = read_with("MC_ETCD_LEASE_TTL", "0", &error);
  ASSERT_TRUE(c.ok()) << error;
  EXPECT_EQ(store_options(*c).lease_ttl, std::chrono::seconds(0));
  c = read_with("MC_METADATA_MAX_VALUE", "64k", &error);
  ASSERT_TRUE(c.ok()) << error;
  EXPECT_EQ(store_options(*c).max_value, 65536u);
}

}  // namespace
}  // namespace mc::metadata
