// SPDX-License-Identifier: Apache-2.0
// The bounded HTTP/1.1 request parser of mc_metadata_server.
#include "tools/metadata/http_request.h"

#include <charconv>
#include <cstdint>

namespace mc::tools::metadata {

namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool parse_query(std::string_view q, std::map<std::string, std::string>* out) {
  while (!q.empty()) {
    const size_t amp = q.find('&');
    const std::string_view item = q.substr(0, amp);
    q = amp == std::string_view::npos ? std::string_view() : q.substr(amp + 1);
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    std::string name, value;
    if (!url_decode(item.substr(0, eq), &name)) return false;
    if (eq != std::string_view::npos && !url_decode(item.substr(eq + 1), &value)) return false;
    (*out)[name] = value;
  }
  return true;
}

ParseState bad(int code, const std::string& why, int* status, std::string* error) {
  *status = code;
  *error = why;
  return ParseState::Bad;
}

}  // namespace

bool url_decode(std::string_view in, std::string* out) {
  out->clear();
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] == '+') {
      out->push_back(' ');
    } else if (in[i] == '%') {
      if (i + 2 >= in.size()) return false;
      const int hi = hex_value(in[i + 1]);
      const int lo = hex_value(in[i + 2]);
      if (hi < 0 || lo < 0) return false;
      out->push_back(static_cast<char>(hi << 4 | lo));
      i += 2;
    } else {
      out->push_back(in[i]);
    }
  }
  return true;
}

ParseState parse_request(std::string_view buf, size_t max_header, size_t max_body, HttpRequest* req,
                         size_t* consumed, int* status, std::string* error) {
  const size_t head_end = buf.find("\r\n\r\n");
  if (head_end == std::string_view::npos) {
    if (buf.size() > max_header) {
      return bad(431, "request headers longer than " + std::to_string(max_header) + " bytes",
                 status, error);
    }
    return ParseState::NeedMore;
  }
  if (head_end > max_header) {
    return bad(431, "request headers longer than " + std::to_string(max_header) + " bytes", status,
               error);
  }
  *req = HttpRequest{};
  std::string_view head = buf.substr(0, head_end);
  const size_t line_end = head.find("\r\n");
  const std::string_view line = head.substr(0, line_end);
  head = line_end == std::string_view::npos ? std::string_view() : head.substr(line_end + 2);
  const size_t sp1 = line.find(' ');
  const size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos) {
    return bad(400, "malformed request line", status, error);
  }
  req->method = std::string(line.substr(0, sp1));
  const std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  const std::string_view version = line.substr(sp2 + 1);
  if (version != "HTTP/1.1" && version != "HTTP/1.0") {
    return bad(505, "unsupported protocol version \"" + std::string(version) + "\"", status, error);
  }
  req->keep_alive = version == "HTTP/1.1";
  if (target.empty() || target[0] != '/')
    return bad(400, "malformed request target", status, error);
  const size_t qmark = target.find('?');
  req->path = std::string(target.substr(0, qmark));
  if (qmark != std::string_view::npos && !parse_query(target.substr(qmark + 1), &req->query)) {
    return bad(400, "malformed percent-escape in the query", status, error);
  }
  while (!head.empty()) {
    const size_t end = head.find("\r\n");
    const std::string_view h = head.substr(0, end);
    head = end == std::string_view::npos ? std::string_view() : head.substr(end + 2);
    const size_t colon = h.find(':');
    if (colon == std::string_view::npos || colon == 0) {
      return bad(400, "malformed header line", status, error);
    }
    req->headers[lower(trim(h.substr(0, colon)))] = std::string(trim(h.substr(colon + 1)));
  }
  if (auto it = req->headers.find("connection"); it != req->headers.end()) {
    const std::string v = lower(it->second);
    if (v == "close") req->keep_alive = false;
    if (v == "keep-alive") req->keep_alive = true;
  }
  if (req->headers.count("transfer-encoding") != 0) {
    return bad(501, "transfer-encoding is not supported; send Content-Length", status, error);
  }
  if (auto it = req->headers.find("expect"); it != req->headers.end()) {
    req->expect_continue = lower(it->second) == "100-continue";
  }
  uint64_t length = 0;
  if (auto it = req->headers.find("content-length"); it != req->headers.end()) {
    const std::string& v = it->second;
    const auto r = std::from_chars(v.data(), v.data() + v.size(), length);
    if (r.ec != std::errc() || r.ptr != v.data() + v.size()) {
      return bad(400, "malformed content-length \"" + v + "\"", status, error);
    }
  }
  if (length > max_body) {
    return bad(413,
               "body of " + std::to_string(length) + " bytes exceeds the limit of " +
                   std::to_string(max_body),
               status, error);
  }
  const size_t body_at = head_end + 4;
  if (buf.size() - body_at < length) return ParseState::NeedBody;
  req->body = std::string(buf.substr(body_at, length));
  *consumed = body_at + length;
  return ParseState::Complete;
}

}  // namespace mc::tools::metadata
