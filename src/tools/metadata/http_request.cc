// SPDX-License-Identifier: Apache-2.0
// The bounded, strict HTTP/1.1 request parser of mc_metadata_server. Strict
// where a lenient reading would let two parsers disagree about where a
// request ends (request smuggling): one Content-Length, no folded lines, no
// stray CR; lenient only in accepting a bare LF as a line end.
#include "tools/metadata/http_request.h"

#include <charconv>
#include <cstdint>
#include <vector>

namespace mc::tools::metadata {

namespace {

// Headers whose meaning depends on there being one: a second one is refused
// rather than letting the first or the last win.
constexpr std::string_view kSingletons[] = {"content-length", "authorization", "if-match",
                                            "if-none-match"};
constexpr size_t kMaxHeaderLines = 100;

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

// RFC 9110 tchar: what a method or a header name is made of.
bool is_token(std::string_view s) {
  if (s.empty()) return false;
  for (const char c : s) {
    const bool alnum = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    if (!alnum && std::string_view("!#$%&'*+-.^_`|~").find(c) == std::string_view::npos) {
      return false;
    }
  }
  return true;
}

bool has_control(std::string_view s) {
  for (const char c : s) {
    if (c == '\r' || c == '\n' || c == '\0') return true;
  }
  return false;
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

// The head's lines without their CRLF or LF (the empty last line dropped).
std::vector<std::string_view> split_lines(std::string_view head) {
  std::vector<std::string_view> lines;
  while (!head.empty()) {
    const size_t nl = head.find('\n');
    std::string_view line = head.substr(0, nl);
    head = nl == std::string_view::npos ? std::string_view() : head.substr(nl + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.push_back(line);
  }
  if (!lines.empty() && lines.back().empty()) lines.pop_back();
  return lines;
}

ParseState bad(int code, const std::string& why, int* status, std::string* error) {
  *status = code;
  *error = why;
  return ParseState::Bad;
}

// "METHOD /target HTTP/1.x": fills method, path, query and keep_alive.
ParseState parse_request_line(std::string_view line, HttpRequest* req, int* status,
                              std::string* error) {
  const size_t sp1 = line.find(' ');
  const size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos ||
      !is_token(line.substr(0, sp1)) || has_control(line)) {
    return bad(400, "malformed request line", status, error);
  }
  req->method = std::string(line.substr(0, sp1));
  const std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  const std::string_view version = line.substr(sp2 + 1);
  if (version != "HTTP/1.1" && version != "HTTP/1.0") {
    return bad(505, "unsupported protocol version \"" + clip(version) + "\"", status, error);
  }
  req->keep_alive = version == "HTTP/1.1";
  if (target.empty() || target[0] != '/') {
    return bad(400, "malformed request target", status, error);
  }
  const size_t qmark = target.find('?');
  req->path = std::string(target.substr(0, qmark));
  if (qmark != std::string_view::npos && !parse_query(target.substr(qmark + 1), &req->query)) {
    return bad(400, "malformed percent-escape in the query", status, error);
  }
  return ParseState::Complete;
}

ParseState parse_header_line(std::string_view h, HttpRequest* req, int* status,
                             std::string* error) {
  if (!h.empty() && (h.front() == ' ' || h.front() == '\t')) {
    return bad(400, "folded header lines are not supported", status, error);
  }
  const size_t colon = h.find(':');
  const std::string_view name = h.substr(0, colon);
  if (colon == std::string_view::npos || !is_token(name) || has_control(h)) {
    return bad(400, "malformed header line", status, error);
  }
  std::string key = lower(name);
  for (const std::string_view single : kSingletons) {
    if (key == single && req->headers.count(key) != 0) {
      return bad(400, "duplicate " + clip(name) + " header", status, error);
    }
  }
  req->headers[std::move(key)] = std::string(trim(h.substr(colon + 1)));
  return ParseState::Complete;
}

// Connection, Transfer-Encoding, Expect and Content-Length, once all headers are in.
ParseState apply_headers(size_t max_body, HttpRequest* req, int* status, std::string* error) {
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
      return bad(400, "malformed content-length \"" + clip(v) + "\"", status, error);
    }
  }
  if (length > max_body) {
    return bad(413,
               "body of " + std::to_string(length) + " bytes exceeds the limit of " +
                   std::to_string(max_body),
               status, error);
  }
  req->content_length = static_cast<size_t>(length);
  return ParseState::Complete;
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

std::string clip(std::string_view text) {
  const bool cut = text.size() > kMaxEcho;
  std::string out(text.substr(0, kMaxEcho));
  for (char& c : out) {
    if (c < 0x20 || c > 0x7e) c = '?';
  }
  if (cut) out += "...";
  return out;
}

size_t find_head_end(std::string_view buf, size_t* scanned) {
  // An empty line is an LF right after an LF, or after CR after LF; one at
  // the very start ends an (empty, malformed) head at once.
  for (size_t nl = buf.find('\n', *scanned); nl != std::string_view::npos;
       nl = buf.find('\n', nl + 1)) {
    size_t at = nl;
    if (at > 0 && buf[at - 1] == '\r') --at;
    if (at == 0 || buf[at - 1] == '\n') return nl + 1;
  }
  *scanned = buf.size();
  return std::string_view::npos;
}

ParseState parse_request(std::string_view buf, size_t max_header, size_t max_body, HttpRequest* req,
                         size_t* consumed, int* status, std::string* error) {
  size_t scanned = 0;
  const size_t head_end = find_head_end(buf, &scanned);
  if ((head_end == std::string_view::npos && buf.size() > max_header) ||
      (head_end != std::string_view::npos && head_end > max_header)) {
    return bad(431, "request headers longer than " + std::to_string(max_header) + " bytes", status,
               error);
  }
  if (head_end == std::string_view::npos) return ParseState::NeedMore;
  *req = HttpRequest{};
  const std::vector<std::string_view> lines = split_lines(buf.substr(0, head_end));
  if (lines.size() > kMaxHeaderLines + 1) {
    return bad(431, "more than " + std::to_string(kMaxHeaderLines) + " header lines", status,
               error);
  }
  if (lines.empty()) return bad(400, "malformed request line", status, error);
  ParseState s = parse_request_line(lines[0], req, status, error);
  for (size_t i = 1; i < lines.size() && s != ParseState::Bad; ++i) {
    s = parse_header_line(lines[i], req, status, error);
  }
  if (s == ParseState::Bad) return s;
  s = apply_headers(max_body, req, status, error);
  if (s == ParseState::Bad) return s;
  *consumed = head_end + req->content_length;
  if (buf.size() < *consumed) return ParseState::NeedBody;
  req->body = std::string(buf.substr(head_end, req->content_length));
  return ParseState::Complete;
}

}  // namespace mc::tools::metadata
