// SPDX-License-Identifier: Apache-2.0
// The protocol table of protocol.h.
#include "protocol.h"

namespace mooncake {

const ProtocolTls* find_protocol_tls(std::string_view name) {
  static const std::vector<ProtocolTls> kProtocols = {
      {"tcp", {"tcp"}}, {"rdma", {"rc_verbs", "rc_mlx5"}}, {"nvmeof", {}}};
  for (const ProtocolTls& p : kProtocols) {
    if (name == p.name) return &p;
  }
  return nullptr;
}

std::string protocols_tls(const std::vector<std::string>& names) {
  std::string tls;
  for (const std::string& n : names) {
    const ProtocolTls* p = find_protocol_tls(n);
    if (p == nullptr) continue;
    for (const std::string& tl : p->tls) tls += (tls.empty() ? "" : ",") + tl;
  }
  return tls;
}

}  // namespace mooncake
