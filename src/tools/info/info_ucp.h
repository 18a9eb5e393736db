// SPDX-License-Identifier: Apache-2.0
// mc_info's UCP reports: a worker of this process (-w), and the lane
// selection (-e) and protocol tables (-p) of an endpoint to a peer.
#pragma once

#include <string>

namespace mc::info {

/// What print_ucp_endpoint() writes.
struct EndpointReport {
  bool lanes = false;      ///< -e: lanes, every candidate's score terms, rejections
  bool protocols = false;  ///< -p: the protocol tables
  bool json = false;       ///< --json: one JSON object (lanes, candidates, rejections, tables)
};

/// Writes the report for an endpoint to `peer`: "loopback" (a second worker
/// of this process, connected to), a file holding a hex-encoded worker
/// address, or the hex text itself (scored without connecting). Returns the
/// exit status (0, or 1 with the reason on stderr).
int print_ucp_endpoint(const std::string& peer, const EndpointReport& report);

/// Writes the resources of a worker of this process and its address in hex
/// (what -e and -p accept); one JSON object with `json`. Returns the exit
/// status.
int print_ucp_worker(bool json = false);

}  // namespace mc::info
