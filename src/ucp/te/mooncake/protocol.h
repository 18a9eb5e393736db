// SPDX-License-Identifier: Apache-2.0
// Mooncake's protocol names (installTransport, the Python initialize's
// `protocol`) and the mc transports each stands for, in one table that the
// C API, the C++ class and the Python package share. Not installed.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace mooncake {

/// A protocol and its MC_TLS entries; none for nvmeof: the engine opens its
/// file transport when a file segment is opened.
struct ProtocolTls {
  const char* name;
  std::vector<std::string> tls;
};

/// "tcp" -> tcp, "rdma" -> rc_verbs and rc_mlx5, "nvmeof" -> none; nullptr
/// for any other name (nvlink, efa, ...). Thread-safe.
const ProtocolTls* find_protocol_tls(std::string_view name);

/// MC_TLS for `names` (each a known protocol): their entries comma-separated
/// in order; empty when none stands for a transport.
std::string protocols_tls(const std::vector<std::string>& names);

}  // namespace mooncake
