// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: the tcp transport's frame header, device and iface
// address and rkey payload decoders (src/uct/tcp/tcp_wire.h).
#include <cstdint>
#include <cstdlib>
#include <span>
#include <string>

#include "uct/tcp/tcp_wire.h"

namespace wire = mc::uct::tcp::wire;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const uint8_t> in(data, size);
  std::string reason;
  wire::Limits limits;
  auto header = wire::decode(in, limits, &reason);
  if (!header.ok() && reason.empty()) std::abort();
  (void)wire::decode_device_addr(in);
  (void)wire::decode_iface_addr(in);
  wire::RkeyPayload rkey;
  reason.clear();
  if (!wire::decode_rkey(in, &rkey, &reason) && reason.empty()) std::abort();
  return 0;
}
