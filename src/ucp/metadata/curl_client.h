// SPDX-License-Identifier: Apache-2.0
// What the http and etcd backend modules share: one bounded libcurl request
// with its failure turned into a status and "<url>: <cause>". Compiled into
// each of those modules (libmc_metadata itself does not need libcurl).
#pragma once

#include <chrono>
#include <string>

#include "ucs/status/status.h"

namespace mc::metadata {

struct HttpReply {
  long code = 0;  ///< HTTP status
  std::string body;
};

/// Calls curl_global_init once per process (thread-safe).
void curl_init_once();

/// Percent-encodes `s` for a query component (RFC 3986 unreserved kept).
std::string url_escape(const std::string& s);

/// One request: `method` ("GET", "PUT", "POST", "DELETE") to `url`, with
/// `body` when not null, finished within `timeout` (connecting included).
/// No proxy is used and no "Expect: 100-continue" is sent. On a transport
/// failure returns IoError (Timeout when the bound passed) and sets `*error`
/// to "<shown_url>: <cause>", e.g. "etcd://127.0.0.1:1: connection refused".
/// Any HTTP status is Ok here: the caller maps it.
ucs::Status curl_request(const std::string& method, const std::string& url, const std::string* body,
                         const char* content_type, std::chrono::milliseconds timeout,
                         const std::string& shown_url, HttpReply* reply, std::string* error);

}  // namespace mc::metadata
