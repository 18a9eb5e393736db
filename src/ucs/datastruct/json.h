// SPDX-License-Identifier: Apache-2.0
// A small bounded JSON reader and writer (RFC 8259) for metadata values and
// HTTP gateways, so the core needs no third-party JSON library. Integers keep
// all 64 bits; object members keep their order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ucs/status/status.h"

namespace mc::ucs::json {

/// The kind of a JSON value. A number without fraction or exponent is Int
/// when negative and UInt otherwise (when it fits 64 bits); every other
/// number is Double.
enum class Type { Null, Bool, Int, UInt, Double, String, Array, Object };

/// Name of a type for error messages ("string", "unsigned integer", ...).
const char* type_name(Type type);

struct Member;

/// One JSON value. Copyable; an object is a vector of members in order.
class Value {
 public:
  Value();  ///< null
  Value(std::nullptr_t);
  Value(bool b);
  Value(uint64_t u);
  Value(uint32_t u);
  Value(int64_t i);
  Value(int i);
  Value(double d);
  Value(std::string s);
  Value(std::string_view s);
  Value(const char* s);

  static Value array();
  static Value object();

  Type type() const { return type_; }
  bool is_null() const { return type_ == Type::Null; }
  bool is_bool() const { return type_ == Type::Bool; }
  bool is_string() const { return type_ == Type::String; }
  bool is_array() const { return type_ == Type::Array; }
  bool is_object() const { return type_ == Type::Object; }
  bool is_number() const {
    return type_ == Type::Int || type_ == Type::UInt || type_ == Type::Double;
  }

  /// The boolean, or nullopt when this is not a Bool.
  std::optional<bool> as_bool() const;
  /// The value as uint64 when it is an integer >= 0 (never from a Double).
  std::optional<uint64_t> as_uint() const;
  /// The value as int64 when it is an integer in int64's range.
  std::optional<int64_t> as_int() const;
  /// Any number as double (integers may round).
  std::optional<double> as_double() const;
  /// The string, or null when this is not a String.
  const std::string* as_string() const { return is_string() ? &s_ : nullptr; }

  /// Array elements (empty for other types).
  const std::vector<Value>& items() const { return arr_; }
  /// Appends to an array (a null becomes an empty array first).
  Value& push_back(Value v);

  /// Object members in order (empty for other types).
  const std::vector<Member>& members() const { return obj_; }
  /// The member `key` of an object, or null when absent or not an object.
  const Value* find(std::string_view key) const;
  /// Sets member `key`, replacing an existing one (a null becomes an object).
  Value& set(std::string key, Value v);

  /// Elements of an array or members of an object; 0 otherwise.
  size_t size() const;

  bool operator==(const Value& other) const;

 private:
  explicit Value(Type t);

  Type type_ = Type::Null;
  bool b_ = false;
  int64_t i_ = 0;
  uint64_t u_ = 0;
  double d_ = 0;
  std::string s_;
  std::vector<Value> arr_;
  std::vector<Member> obj_;
};

struct Member {
  std::string key;
  Value value;
  bool operator==(const Member& other) const = default;
};

// Defined here, where Member is complete: clang instantiates the members'
// destructors inside any constructor body written in the class.
inline Value::Value() = default;
inline Value::Value(std::nullptr_t) {}
inline Value::Value(bool b) : type_(Type::Bool), b_(b) {}
inline Value::Value(uint64_t u) : type_(Type::UInt), u_(u) {}
inline Value::Value(uint32_t u) : Value(static_cast<uint64_t>(u)) {}
inline Value::Value(int64_t i)
    : type_(i < 0 ? Type::Int : Type::UInt), i_(i), u_(static_cast<uint64_t>(i)) {}
inline Value::Value(int i) : Value(static_cast<int64_t>(i)) {}
inline Value::Value(double d) : type_(Type::Double), d_(d) {}
inline Value::Value(std::string s) : type_(Type::String), s_(std::move(s)) {}
inline Value::Value(std::string_view s) : Value(std::string(s)) {}
inline Value::Value(const char* s) : Value(std::string(s)) {}
inline Value Value::array() {
  return Value(Type::Array);
}
inline Value Value::object() {
  return Value(Type::Object);
}
inline Value::Value(Type t) : type_(t) {}

/// Bounds of parse(). Inputs past them are refused, not truncated.
struct Limits {
  size_t max_size = size_t{64} << 20;    ///< bytes of the whole text
  size_t max_depth = 64;                 ///< nesting of arrays and objects
  size_t max_string = size_t{16} << 20;  ///< bytes of one decoded string
};

/// Parses exactly one JSON value (surrounding whitespace allowed). On failure
/// returns BadData and sets `*error` (optional) to "offset N: reason", e.g.
/// "offset 12: unterminated string". Strings must be valid UTF-8; \u escapes,
/// surrogate pairs included, are decoded to UTF-8; duplicate object keys are
/// refused. Never throws, never reads past `text`.
Result<Value> parse(std::string_view text, std::string* error = nullptr, const Limits& limits = {});

/// Writes `value` compactly (no spaces). Control characters, '"' and '\\'
/// are escaped; other bytes are written as they are (strings should be UTF-8
/// for another parser to accept them). Non-finite doubles are written as null.
std::string write(const Value& value);

/// Appends `s` as a quoted, escaped JSON string to `*out`.
void write_string(std::string_view s, std::string* out);

}  // namespace mc::ucs::json
