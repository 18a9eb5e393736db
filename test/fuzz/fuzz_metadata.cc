// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: the metadata value decoders (rpc_meta, ram and nvmeof
// segment descriptors) that read what a metadata server or a peer sent. A
// descriptor that decodes must encode to JSON that decodes to the same.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "ucp/metadata/descriptors.h"

namespace md = mc::metadata;

namespace {

template <typename T, typename Decode>
void check(std::string_view text, Decode decode) {
  std::string error;
  auto v = decode(text, &error);
  if (!v.ok()) {
    if (error.empty()) std::abort();
    return;
  }
  const std::string encoded = md::encode(*v);
  auto again = decode(encoded, &error);
  if (!again.ok() || md::encode(*again) != encoded) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  check<md::RpcMeta>(text, md::decode_rpc_meta);
  check<md::SegmentDesc>(text, md::decode_segment);
  check<md::FileSegmentDesc>(text, md::decode_file_segment);
  return 0;
}
