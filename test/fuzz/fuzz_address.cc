// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: the UCP worker address decoder. Whatever unpacks must
// pack back to the same bytes (the format has one encoding per value).
#include <cstdint>
#include <cstdlib>
#include <span>
#include <string>

#include "ucp/wireup/address.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const uint8_t> in(data, size);
  std::string why;
  auto address = mc::ucp::wireup::address_unpack(in, &why);
  if (!address.ok()) {
    if (why.empty()) std::abort();  // every refusal names its reason
    return 0;
  }
  auto again = mc::ucp::wireup::address_unpack(mc::ucp::wireup::address_pack(*address));
  if (!again.ok() || !(*again == *address)) std::abort();
  return 0;
}
