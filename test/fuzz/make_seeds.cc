// SPDX-License-Identifier: Apache-2.0
// Writes the seed corpus of the fuzz targets from real objects: the packed
// address of a worker over every loaded transport, the packed rkey of a
// registration, tcp frame headers of every op, and config texts.
//   make_seeds <corpus dir>        (MC_MODULE_DIR: the build's modules/)
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "ucp/api/ucp.h"
#include "ucp/metadata/descriptors.h"
#include "ucp/te/handshake.h"
#include "uct/tcp/tcp_wire.h"

namespace fs = std::filesystem;

namespace {

void write(const fs::path& dir, const std::string& name, const std::vector<uint8_t>& bytes) {
  fs::create_directories(dir);
  std::ofstream(dir / name, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

std::vector<uint8_t> text(char selector, const std::string& s) {
  std::vector<uint8_t> out{static_cast<uint8_t>(selector)};
  out.insert(out.end(), s.begin(), s.end());
  return out;
}

int ucp_seeds(const fs::path& root) {
  auto context = mc::ucp::Context::create();
  if (!context.ok()) return 1;
  auto worker = mc::ucp::Worker::create(**context);
  if (!worker.ok()) return 1;
  write(root / "fuzz_address", "worker", (*worker)->address());
  static char buffer[4096];
  auto memh = mc::ucp::MemHandle::map(**context, buffer, sizeof(buffer));
  if (!memh.ok()) return 1;
  auto rkey = (*memh)->rkey_pack();
  if (!rkey.ok()) return 1;
  write(root / "fuzz_rkey", "registration", *rkey);
  return 0;
}

void tcp_seeds(const fs::path& root) {
  namespace wire = mc::uct::tcp::wire;
  for (uint8_t op = 0; op <= static_cast<uint8_t>(wire::Op::Bye); ++op) {
    wire::FrameHeader h = static_cast<wire::Op>(op) == wire::Op::Hello
                              ? wire::hello_header(wire::hello_identity(0x7f000001, 15000), 0)
                              : wire::FrameHeader{};
    h.op = static_cast<wire::Op>(op);
    if (h.op != wire::Op::Hello) h.length = 64;
    std::vector<uint8_t> bytes(64);
    wire::encode(h, bytes.data());
    write(root / "fuzz_tcp_wire", "op" + std::to_string(op), bytes);
  }
  std::vector<uint8_t> key;
  wire::encode_rkey(wire::RkeyPayload{1, 2, 4096, 4096, 7}, &key);
  write(root / "fuzz_tcp_wire", "rkey", key);
  write(root / "fuzz_tcp_wire", "device", wire::encode_device_addr(wire::DeviceAddr{0x0100007f, 1, 2}));
  write(root / "fuzz_tcp_wire", "iface", wire::encode_iface_addr(15000));
}

void config_seeds(const fs::path& root) {
  const std::vector<std::string> values = {
      "yes", "hello", "-17", "42", "64k", "1.5ms", "12.5GBps", "0.25", "^tcp,sm",
      "a,b,c", "green", "auto", "host:512k,cuda:4m", "MC_TLS=tcp\n# comment\nMC_LOG_LEVEL = info\n"};
  for (size_t i = 0; i < values.size(); ++i)
    write(root / "fuzz_config", "value" + std::to_string(i), text(static_cast<char>(i), values[i]));
}

void metadata_seeds(const fs::path& root) {
  namespace md = mc::metadata;
  md::SegmentDesc seg;
  seg.server_name = "node01";
  seg.devices = {{"tcp:lo"}, {"sm:memory"}};
  seg.priority_matrix["cpu:0"] = {{"tcp:lo"}, {"sm:memory"}};
  seg.buffers = {{"cpu:0", 0x7fa16bdf5000, 1 << 20, {1, 2, 3, 0xff}}};
  seg.worker_address = {0xde, 0xad, 0xbe, 0xef};
  seg.generation = 7;
  md::FileSegmentDesc file;
  file.server_name = "node01";
  file.buffers = {{1 << 30, "/mnt/nvme0", {{"node02", "/mnt/te/node01/nvme0"}}}};
  const std::vector<std::pair<std::string, std::string>> texts = {
      {"rpc_meta", md::encode(md::RpcMeta{"node01", 15001})},
      {"ram", md::encode(seg)},
      {"nvmeof", md::encode(file)},
      {"numbers", R"([0, -1, 18446744073709551615, 1.5e300, "\u00e9\ud83d\ude00", true, null, {}])"}};
  for (const auto& [name, text] : texts) {
    const std::vector<uint8_t> bytes(text.begin(), text.end());
    write(root / "fuzz_metadata", name, bytes);
    write(root / "fuzz_json", name, bytes);
  }
}

void handshake_seeds(const fs::path& root) {
  write(root / "fuzz_handshake", "request", mc::te::encode_frame(mc::te::kGetSegment, "node01"));
  for (const std::string conn : {"127.0.0.1:15001", "P2PHANDSHAKE", "http://127.0.0.1:8080/metadata",
                                 "etcd://10.0.0.1:2379,10.0.0.2:2379", "redis://:pw@host:6379/2",
                                 "[::1]:15001"}) {
    write(root / "fuzz_handshake", "conn" + std::to_string(conn.size()),
          std::vector<uint8_t>(conn.begin(), conn.end()));
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <corpus dir>\n", argv[0]);
    return 2;
  }
  const fs::path root(argv[1]);
  tcp_seeds(root);
  config_seeds(root);
  metadata_seeds(root);
  handshake_seeds(root);
  if (ucp_seeds(root) != 0) {
    std::fprintf(stderr, "make_seeds: could not build a worker (is MC_MODULE_DIR set?)\n");
    return 1;
  }
  return 0;
}
