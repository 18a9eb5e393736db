// SPDX-License-Identifier: Apache-2.0
// The metadata values in the Transfer Engine document's shape, and their
// JSON codec (ucs/datastruct/json). Decoders check every field's presence,
// type and range and return BadData with the reason; they never crash.
//
//   <prefix>/rpc_meta/<server>  {"ip_or_host_name": "...", "rpc_port": 15001}
//   <prefix>/ram/<segment>      {"server_name", "protocol", "devices": [{"name"...}],
//                                "priority_matrix": {"cpu:0": [["dev"], ["dev2"]]},
//                                "buffers": [{"name", "addr", "length", "rkey"}],
//                                "worker_address": "<hex>", "generation": N}
//   <prefix>/nvmeof/<segment>   {"server_name", "protocol": "nvmeof",
//                                "buffers": [{"length", "file_path", "local_path_map": {...}}]}
// The default prefix is "mooncake" (MC_METADATA_KEY_PREFIX).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "ucs/status/status.h"

namespace mc::metadata {

struct RpcMeta {
  std::string ip_or_host_name;
  uint16_t rpc_port = 0;
};

struct DeviceDesc {
  std::string name;  ///< e.g. "tcp:lo", "sm:memory", "mlx5_2"
};

/// One registered buffer of a RAM segment. `rkey` is the packed UCP rkey
/// (MemHandle::rkey_pack), hex in JSON.
struct BufferDesc {
  std::string name;  ///< its location: "cpu:0", "cuda:1"
  uint64_t addr = 0;
  uint64_t length = 0;
  std::vector<uint8_t> rkey;
};

/// location -> [preferred devices, secondary devices]
using PriorityMatrix = std::map<std::string, std::pair<std::vector<std::string>, std::vector<std::string>>>;

struct SegmentDesc {
  std::string server_name;
  std::string protocol = "ucp";
  std::vector<DeviceDesc> devices;
  PriorityMatrix priority_matrix;
  std::vector<BufferDesc> buffers;
  std::vector<uint8_t> worker_address;  ///< packed UCP worker address, hex in JSON
  uint64_t generation = 0;              ///< changes when the engine restarts
};

/// One file of an NVMe-oF segment.
struct FileBufferDesc {
  uint64_t length = 0;
  std::string file_path;
  std::map<std::string, std::string> local_path_map;  ///< host -> path there
};

struct FileSegmentDesc {
  std::string server_name;
  std::string protocol = "nvmeof";
  std::vector<FileBufferDesc> buffers;
};

std::string rpc_meta_key(std::string_view prefix, std::string_view server);
std::string ram_key(std::string_view prefix, std::string_view segment);
std::string nvmeof_key(std::string_view prefix, std::string_view segment);

std::string encode(const RpcMeta& v);
std::string encode(const SegmentDesc& v);
std::string encode(const FileSegmentDesc& v);

/// Decoders: BadData with `*error` naming the field and the problem.
ucs::Result<RpcMeta> decode_rpc_meta(std::string_view json, std::string* error);
ucs::Result<SegmentDesc> decode_segment(std::string_view json, std::string* error);
ucs::Result<FileSegmentDesc> decode_file_segment(std::string_view json, std::string* error);

}  // namespace mc::metadata
