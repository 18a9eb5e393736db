// SPDX-License-Identifier: Apache-2.0
// mc_info --json: member and element separators over ucs::json's string escaping,
// and the JSON forms of the UCP endpoint report and of the build report.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>

#include "ucp/api/ucp.h"
#include "ucp/core/endpoint.h"
#include "ucp/core/worker.h"

namespace mc::info {

/// `s` as a JSON string literal, quotes included.
std::string json_string(std::string_view s);

/// Writes comma-separated members or elements; the caller writes the
/// brackets. Not thread-safe.
class JsonList {
 public:
  explicit JsonList(std::ostream& os) : os_(os) {}
  /// Starts a member "key": and returns the stream for its value.
  std::ostream& key(std::string_view k);
  /// Starts an array element and returns the stream for it.
  std::ostream& item();

 private:
  std::ostream& os_;
  bool first_ = true;
};

/// The -e / -p report as one JSON object: the peer, the lanes with their
/// roles, every candidate's score terms, every rejection with its reason,
/// and (with protocols) the tables of every operation.
void print_endpoint_json(const ucp::wireup::WorkerAddress& peer,
                         const ucp::wireup::LaneSelection& sel,
                         const ucp::proto::EpProtocols* protocols, std::ostream& os);

}  // namespace mc::info
