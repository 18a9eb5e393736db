// SPDX-License-Identifier: Apache-2.0
// The bounded JSON reader and writer: a recursive-descent parser with a depth
// counter, every read checked against the end of the input.
#include "ucs/datastruct/json.h"

#include <charconv>
#include <cmath>
#include <limits>

namespace mc::ucs::json {

const char* type_name(Type type) {
  switch (type) {
    case Type::Null: return "null";
    case Type::Bool: return "boolean";
    case Type::Int: return "negative integer";
    case Type::UInt: return "unsigned integer";
    case Type::Double: return "number with a fraction or exponent";
    case Type::String: return "string";
    case Type::Array: return "array";
    case Type::Object: return "object";
  }
  return "unknown";
}

std::optional<bool> Value::as_bool() const {
  if (type_ != Type::Bool) return std::nullopt;
  return b_;
}

std::optional<uint64_t> Value::as_uint() const {
  if (type_ != Type::UInt) return std::nullopt;
  return u_;
}

std::optional<int64_t> Value::as_int() const {
  if (type_ == Type::Int) return i_;
  if (type_ == Type::UInt && u_ <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return static_cast<int64_t>(u_);
  }
  return std::nullopt;
}

std::optional<double> Value::as_double() const {
  switch (type_) {
    case Type::Int: return static_cast<double>(i_);
    case Type::UInt: return static_cast<double>(u_);
    case Type::Double: return d_;
    default: return std::nullopt;
  }
}

Value& Value::push_back(Value v) {
  if (type_ == Type::Null) type_ = Type::Array;
  arr_.push_back(std::move(v));
  return arr_.back();
}

const Value* Value::find(std::string_view key) const {
  for (const Member& m : obj_) {
    if (m.key == key) return &m.value;
  }
  return nullptr;
}

Value& Value::set(std::string key, Value v) {
  if (type_ == Type::Null) type_ = Type::Object;
  for (Member& m : obj_) {
    if (m.key == key) {
      m.value = std::move(v);
      return m.value;
    }
  }
  obj_.push_back(Member{std::move(key), std::move(v)});
  return obj_.back().value;
}

size_t Value::size() const {
  if (type_ == Type::Array) return arr_.size();
  if (type_ == Type::Object) return obj_.size();
  return 0;
}

bool Value::operator==(const Value& o) const {
  if (type_ != o.type_) return false;
  switch (type_) {
    case Type::Null: return true;
    case Type::Bool: return b_ == o.b_;
    case Type::Int: return i_ == o.i_;
    case Type::UInt: return u_ == o.u_;
    case Type::Double: return d_ == o.d_;
    case Type::String: return s_ == o.s_;
    case Type::Array: return arr_ == o.arr_;
    case Type::Object: return obj_ == o.obj_;
  }
  return false;
}

namespace {

class Parser {
 public:
  Parser(std::string_view text, const Limits& limits) : text_(text), limits_(limits) {}

  Result<Value> run(std::string* error) {
    Value v;
    if (text_.size() > limits_.max_size) {
      fail(limits_.max_size, "input of " + std::to_string(text_.size()) +
                                 " bytes exceeds the limit of " + std::to_string(limits_.max_size));
    } else {
      skip_ws();
      if (value(&v, 0)) {
        skip_ws();
        if (pos_ != text_.size()) fail(pos_, "unexpected data after the value");
      }
    }
    if (!error_.empty()) {
      if (error) *error = error_;
      return Status::BadData;
    }
    return v;
  }

 private:
  bool fail(size_t at, const std::string& why) {
    if (error_.empty()) error_ = "offset " + std::to_string(at) + ": " + why;
    return false;
  }
  bool at_end() const { return pos_ >= text_.size(); }
  char peek() const { return text_[pos_]; }

  void skip_ws() {
    while (!at_end() && (peek() == ' ' || peek() == '\t' || peek() == '\n' || peek() == '\r')) {
      ++pos_;
    }
  }

  bool literal(std::string_view word, Value v, Value* out) {
    if (text_.substr(pos_, word.size()) != word) return fail(pos_, "invalid literal");
    pos_ += word.size();
    *out = std::move(v);
    return true;
  }

  bool value(Value* out, size_t depth) {
    if (at_end()) return fail(pos_, "unexpected end of input, expected a value");
    switch (peek()) {
      case '{': return object(out, depth + 1);
      case '[': return array(out, depth + 1);
      case '"': {
        std::string s;
        if (!string(&s)) return false;
        *out = Value(std::move(s));
        return true;
      }
      case 't': return literal("true", Value(true), out);
      case 'f': return literal("false", Value(false), out);
      case 'n': return literal("null", Value(), out);
      default: return number(out);
    }
  }

  bool enter(size_t depth) {
    if (depth > limits_.max_depth) {
      return fail(pos_, "nesting deeper than " + std::to_string(limits_.max_depth));
    }
    ++pos_;  // the opening bracket
    skip_ws();
    return true;
  }

  bool array(Value* out, size_t depth) {
    if (!enter(depth)) return false;
    *out = Value::array();
    if (!at_end() && peek() == ']') {
      ++pos_;
      return true;
    }
    for (;;) {
      Value item;
      if (!value(&item, depth)) return false;
      out->push_back(std::move(item));
      skip_ws();
      if (at_end()) return fail(pos_, "unterminated array");
      if (peek() == ']') {
        ++pos_;
        return true;
      }
      if (peek() != ',') return fail(pos_, "expected ',' or ']' in an array");
      ++pos_;
      skip_ws();
    }
  }

  bool object(Value* out, size_t depth) {
    if (!enter(depth)) return false;
    *out = Value::object();
    if (!at_end() && peek() == '}') {
      ++pos_;
      return true;
    }
    for (;;) {
      if (at_end()) return fail(pos_, "unterminated object");
      if (peek() != '"') return fail(pos_, "expected a string key in an object");
      const size_t key_at = pos_;
      std::string key;
      if (!string(&key)) return false;
      if (out->find(key) != nullptr) return fail(key_at, "duplicate key \"" + key + "\"");
      skip_ws();
      if (at_end() || peek() != ':') return fail(pos_, "expected ':' after an object key");
      ++pos_;
      skip_ws();
      Value v;
      if (!value(&v, depth)) return false;
      out->set(std::move(key), std::move(v));
      skip_ws();
      if (at_end()) return fail(pos_, "unterminated object");
      if (peek() == '}') {
        ++pos_;
        return true;
      }
      if (peek() != ',') return fail(pos_, "expected ',' or '}' in an object");
      ++pos_;
      skip_ws();
    }
  }

  bool hex4(uint32_t* cp) {
    if (text_.size() - pos_ < 4) return fail(pos_, "truncated \\u escape");
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = text_[pos_ + i];
      v <<= 4;
      if (c >= '0' && c <= '9')
        v |= c - '0';
      else if (c >= 'a' && c <= 'f')
        v |= c - 'a' + 10;
      else if (c >= 'A' && c <= 'F')
        v |= c - 'A' + 10;
      else
        return fail(pos_ + i, "invalid hex digit in a \\u escape");
    }
    pos_ += 4;
    *cp = v;
    return true;
  }

  static void append_utf8(uint32_t cp, std::string* s) {
    if (cp < 0x80) {
      s->push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      s->push_back(static_cast<char>(0xc0 | (cp >> 6)));
      s->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    } else if (cp < 0x10000) {
      s->push_back(static_cast<char>(0xe0 | (cp >> 12)));
      s->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
      s->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    } else {
      s->push_back(static_cast<char>(0xf0 | (cp >> 18)));
      s->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3f)));
      s->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
      s->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    }
  }

  // After a backslash: one escape, appended to *s.
  bool escape(std::string* s) {
    if (at_end()) return fail(pos_, "unterminated string");
    const size_t at = pos_ - 1;
    const char c = text_[pos_++];
    switch (c) {
      case '"': s->push_back('"'); return true;
      case '\\': s->push_back('\\'); return true;
      case '/': s->push_back('/'); return true;
      case 'b': s->push_back('\b'); return true;
      case 'f': s->push_back('\f'); return true;
      case 'n': s->push_back('\n'); return true;
      case 'r': s->push_back('\r'); return true;
      case 't': s->push_back('\t'); return true;
      case 'u': break;
      default: return fail(at, "invalid escape");
    }
    uint32_t cp = 0;
    if (!hex4(&cp)) return false;
    if (cp >= 0xdc00 && cp <= 0xdfff) return fail(at, "unpaired low surrogate in a \\u escape");
    if (cp >= 0xd800 && cp <= 0xdbff) {
      if (text_.substr(pos_, 2) != "\\u") return fail(at, "unpaired high surrogate");
      pos_ += 2;
      uint32_t low = 0;
      if (!hex4(&low)) return false;
      if (low < 0xdc00 || low > 0xdfff) return fail(at, "high surrogate without a low one");
      cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
    }
    append_utf8(cp, s);
    return true;
  }

  // One UTF-8 sequence starting at a byte >= 0x80, checked for shortest form
  // and range (no surrogates, <= U+10FFFF).
  bool utf8(std::string* s) {
    const size_t at = pos_;
    const auto b0 = static_cast<uint8_t>(text_[pos_]);
    size_t n = 0;
    uint32_t cp = 0;
    if (b0 >= 0xc2 && b0 <= 0xdf)
      n = 1, cp = b0 & 0x1f;
    else if (b0 >= 0xe0 && b0 <= 0xef)
      n = 2, cp = b0 & 0x0f;
    else if (b0 >= 0xf0 && b0 <= 0xf4)
      n = 3, cp = b0 & 0x07;
    else
      return fail(at, "invalid UTF-8 lead byte in a string");
    if (text_.size() - pos_ - 1 < n) return fail(at, "truncated UTF-8 sequence in a string");
    for (size_t i = 1; i <= n; ++i) {
      const auto b = static_cast<uint8_t>(text_[pos_ + i]);
      if ((b & 0xc0) != 0x80) return fail(at + i, "invalid UTF-8 continuation byte");
      cp = (cp << 6) | (b & 0x3f);
    }
    if ((n == 2 && cp < 0x800) || (n == 3 && (cp < 0x10000 || cp > 0x10ffff)) ||
        (cp >= 0xd800 && cp <= 0xdfff)) {
      return fail(at, "invalid UTF-8 sequence in a string");
    }
    s->append(text_.substr(pos_, n + 1));
    pos_ += n + 1;
    return true;
  }

  bool string(std::string* s) {
    const size_t start = pos_++;  // the opening quote
    for (;;) {
      if (at_end()) return fail(start, "unterminated string");
      if (s->size() > limits_.max_string) {
        return fail(start, "string longer than " + std::to_string(limits_.max_string) + " bytes");
      }
      const auto c = static_cast<uint8_t>(peek());
      if (c == '"') {
        ++pos_;
        return true;
      }
      if (c == '\\') {
        ++pos_;
        if (!escape(s)) return false;
      } else if (c < 0x20) {
        return fail(pos_, "unescaped control character in a string");
      } else if (c >= 0x80) {
        if (!utf8(s)) return false;
      } else {
        s->push_back(static_cast<char>(c));
        ++pos_;
      }
    }
  }

  bool number(Value* out) {
    const size_t start = pos_;
    size_t p = pos_;
    auto digit = [&](size_t i) { return i < text_.size() && text_[i] >= '0' && text_[i] <= '9'; };
    const bool negative = p < text_.size() && text_[p] == '-';
    if (negative) ++p;
    if (!digit(p)) return fail(start, "invalid value");
    if (text_[p] == '0' && digit(p + 1)) return fail(start, "number with a leading zero");
    while (digit(p)) ++p;
    bool integral = true;
    if (p < text_.size() && text_[p] == '.') {
      integral = false;
      ++p;
      if (!digit(p)) return fail(p, "expected a digit after the decimal point");
      while (digit(p)) ++p;
    }
    if (p < text_.size() && (text_[p] == 'e' || text_[p] == 'E')) {
      integral = false;
      ++p;
      if (p < text_.size() && (text_[p] == '+' || text_[p] == '-')) ++p;
      if (!digit(p)) return fail(p, "expected a digit in the exponent");
      while (digit(p)) ++p;
    }
    const char* first = text_.data() + start;
    const char* last = text_.data() + p;
    pos_ = p;
    if (integral && !negative) {
      uint64_t u = 0;
      if (std::from_chars(first, last, u).ec == std::errc()) {
        *out = Value(u);
        return true;
      }
    } else if (integral) {
      int64_t i = 0;
      if (std::from_chars(first, last, i).ec == std::errc()) {
        *out = Value(i);
        return true;
      }
    }
    // A fraction, an exponent, or an integer past 64 bits: a double.
    double d = 0;
    const auto r = std::from_chars(first, last, d);
    if (r.ec != std::errc() || !std::isfinite(d)) return fail(start, "number out of range");
    *out = Value(d);
    return true;
  }

  std::string_view text_;
  const Limits& limits_;
  size_t pos_ = 0;
  std::string error_;
};

void write_value(const Value& v, std::string* out) {
  switch (v.type()) {
    case Type::Null: out->append("null"); return;
    case Type::Bool: out->append(*v.as_bool() ? "true" : "false"); return;
    case Type::Int: out->append(std::to_string(*v.as_int())); return;
    case Type::UInt: out->append(std::to_string(*v.as_uint())); return;
    case Type::Double: {
      const double d = *v.as_double();
      if (!std::isfinite(d)) {
        out->append("null");
        return;
      }
      char buf[64];
      const auto r = std::to_chars(buf, buf + sizeof(buf), d);
      std::string_view text(buf, r.ptr - buf);
      out->append(text);
      // Keep it a Double when read back: "1" would come back as an integer.
      if (text.find_first_of(".eE") == std::string_view::npos) out->append(".0");
      return;
    }
    case Type::String: write_string(*v.as_string(), out); return;
    case Type::Array: {
      out->push_back('[');
      bool first = true;
      for (const Value& item : v.items()) {
        if (!first) out->push_back(',');
        first = false;
        write_value(item, out);
      }
      out->push_back(']');
      return;
    }
    case Type::Object: {
      out->push_back('{');
      bool first = true;
      for (const Member& m : v.members()) {
        if (!first) out->push_back(',');
        first = false;
        write_string(m.key, out);
        out->push_back(':');
        write_value(m.value, out);
      }
      out->push_back('}');
      return;
    }
  }
}

}  // namespace

Result<Value> parse(std::string_view text, std::string* error, const Limits& limits) {
  return Parser(text, limits).run(error);
}

void write_string(std::string_view s, std::string* out) {
  static const char kHex[] = "0123456789abcdef";
  out->push_back('"');
  for (const char ch : s) {
    const auto c = static_cast<uint8_t>(ch);
    switch (c) {
      case '"': out->append("\\\""); break;
      case '\\': out->append("\\\\"); break;
      case '\n': out->append("\\n"); break;
      case '\r': out->append("\\r"); break;
      case '\t': out->append("\\t"); break;
      case '\b': out->append("\\b"); break;
      case '\f': out->append("\\f"); break;
      default:
        if (c < 0x20) {
          out->append("\\u00");
          out->push_back(kHex[c >> 4]);
          out->push_back(kHex[c & 0xf]);
        } else {
          out->push_back(ch);
        }
    }
  }
  out->push_back('"');
}

std::string write(const Value& value) {
  std::string out;
  write_value(value, &out);
  return out;
}

}  // namespace mc::ucs::json
