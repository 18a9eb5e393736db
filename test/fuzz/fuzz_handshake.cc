// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: what the Transfer Engine reads from a peer or a user
// before trusting it: the RPC handshake frame header, "host:port" segment
// names (P2PHANDSHAKE) and metadata connection strings.
#include <cstdint>
#include <cstdlib>
#include <span>
#include <string>
#include <string_view>

#include "ucp/metadata/store.h"
#include "ucp/te/handshake.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string error;
  auto header = mc::te::decode_frame_header(std::span<const uint8_t>(data, size), 4096, &error);
  if (header.ok()) {
    if (header->length > 4096) std::abort();
  } else if (error.empty()) {
    std::abort();
  }
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto host_port = mc::te::split_host_port(text);
  if (host_port.ok() && host_port->first.empty()) std::abort();
  (void)mc::metadata::is_p2p(text);
  (void)mc::metadata::backend_of(text);
  return 0;
}
