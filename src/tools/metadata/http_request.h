// SPDX-License-Identifier: Apache-2.0
// One HTTP/1.1 request of mc_metadata_server: an incremental, bounded parser
// of the request line, headers and a Content-Length body.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <string_view>

namespace mc::tools::metadata {

struct HttpRequest {
  std::string method;
  std::string path;                            ///< the target before '?'
  std::map<std::string, std::string> query;    ///< decoded query parameters
  std::map<std::string, std::string> headers;  ///< names lower-cased
  std::string body;
  bool keep_alive = true;
  bool expect_continue = false;  ///< "Expect: 100-continue" was sent
};

/// Outcome of parse_request().
enum class ParseState {
  Complete,  ///< *req holds a request of *consumed bytes
  NeedMore,  ///< the buffer holds a prefix of a valid request
  NeedBody,  ///< headers complete (*req has them), the body is not all there
  Bad,       ///< answer 400 (or 413) with *error and close
};

/// Parses the request at the start of `buf`. `max_header` bounds the request
/// line and headers, `max_body` the body; `*status` is 400, 413, 501 or 505
/// for a Bad request.
ParseState parse_request(std::string_view buf, size_t max_header, size_t max_body, HttpRequest* req,
                         size_t* consumed, int* status, std::string* error);

/// Percent-decodes a query component ('+' is a space, as in forms). False on
/// a malformed escape.
bool url_decode(std::string_view in, std::string* out);

}  // namespace mc::tools::metadata
