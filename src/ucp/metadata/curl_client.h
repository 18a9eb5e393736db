// SPDX-License-Identifier: Apache-2.0
// What the http and etcd backend modules share: one bounded libcurl request
// with its failure turned into a status and "<url>: <cause>". Compiled into
// each of those modules (libmc_metadata itself does not need libcurl).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "ucs/status/status.h"

namespace mc::metadata {

struct HttpReply {
  long code = 0;  ///< HTTP status
  std::string body;
  std::string etag;  ///< the ETag header's value, quotes kept; empty when none
};

/// What a request sends beyond its method, URL and body, and how much of
/// the answer it reads.
struct HttpRequestOptions {
  std::vector<std::string> headers;  ///< "Name: value" lines
  size_t max_body = SIZE_MAX;        ///< a longer answer fails with MessageTruncated
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
/// An answer longer than `options.max_body` is cut off while it is read:
/// MessageTruncated, `*error` giving the bound. Any HTTP status is Ok here:
/// the caller maps it.
ucs::Status curl_request(const std::string& method, const std::string& url, const std::string* body,
                         const char* content_type, std::chrono::milliseconds timeout,
                         const std::string& shown_url, HttpReply* reply, std::string* error,
                         const HttpRequestOptions& options = {});

}  // namespace mc::metadata
