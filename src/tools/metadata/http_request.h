// SPDX-License-Identifier: Apache-2.0
// One HTTP/1.1 request of mc_metadata_server: an incremental, bounded, strict
// parser of the request line, headers and a Content-Length body.
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
  size_t content_length = 0;
  bool keep_alive = true;
  bool expect_continue = false;  ///< "Expect: 100-continue" was sent
};

/// Outcome of parse_request().
enum class ParseState {
  Complete,  ///< *req holds a request of *consumed bytes
  NeedMore,  ///< the buffer holds a prefix of a valid request's head
  NeedBody,  ///< head complete (*req has it); the request takes *consumed bytes in all
  Bad,       ///< answer *status with *error and close
};

/// Where the head (request line and headers, up to and including the empty
/// line) of the request at the start of `buf` ends, or npos. Lines end in
/// CRLF or a bare LF. `*scanned` (0 for a new request) keeps how far the
/// search went, so a head that arrives byte by byte is searched once.
size_t find_head_end(std::string_view buf, size_t* scanned);

/// Parses the request at the start of `buf`. `max_header` bounds the request
/// line and headers (431 beyond), `max_body` the body (413). `*status` is
/// 400, 413, 431, 501 or 505 for a Bad request; `*error` then echoes at most
/// kMaxEcho characters of any field it quotes. Refused with 400: a second
/// Content-Length (even an equal one), Authorization, If-Match or
/// If-None-Match; a Content-Length that is not a decimal number or overflows;
/// a header name with blanks or other non-token characters; a folded line;
/// a CR or NUL inside a line.
ParseState parse_request(std::string_view buf, size_t max_header, size_t max_body, HttpRequest* req,
                         size_t* consumed, int* status, std::string* error);

/// Percent-decodes a query component ('+' is a space, as in forms). False on
/// a malformed escape.
bool url_decode(std::string_view in, std::string* out);

/// The most characters of a request's field an error message quotes.
constexpr size_t kMaxEcho = 64;

/// `text` cut to kMaxEcho characters, "..." added when cut; bytes outside
/// printable ASCII become '?', so an echo cannot inject lines.
std::string clip(std::string_view text);

}  // namespace mc::tools::metadata
