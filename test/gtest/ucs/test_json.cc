// SPDX-License-Identifier: Apache-2.0
// The bounded JSON reader/writer: values, 64-bit integers, escapes, limits,
// and garbage or truncated input refused with the offset and the reason.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

#include "ucs/datastruct/json.h"

namespace mc::ucs::json {
namespace {

Value parse_ok(std::string_view text) {
  std::string error;
  Result<Value> r = parse(text, &error);
  EXPECT_TRUE(r.ok()) << text << ": " << error;
  return r.ok() ? *r : Value();
}

std::string parse_error(std::string_view text, const Limits& limits = {}) {
  std::string error;
  Result<Value> r = parse(text, &error, limits);
  EXPECT_EQ(r.status(), Status::BadData) << "accepted: " << text;
  return error;
}

TEST(Json, ScalarsAndTypes) {
  EXPECT_TRUE(parse_ok("null").is_null());
  EXPECT_EQ(parse_ok(" true ").as_bool(), true);
  EXPECT_EQ(parse_ok("false").as_bool(), false);
  EXPECT_EQ(parse_ok("0").as_uint(), 0u);
  EXPECT_EQ(parse_ok("-0").type(), Type::UInt);  // -0 is the integer 0
  EXPECT_EQ(parse_ok("-17").as_int(), -17);
  EXPECT_EQ(parse_ok("-17").as_uint(), std::nullopt);
  EXPECT_EQ(parse_ok("1.5").as_double(), 1.5);
  EXPECT_EQ(parse_ok("1.5").as_uint(), std::nullopt);
  EXPECT_EQ(parse_ok("2e3").type(), Type::Double);
  EXPECT_EQ(parse_ok("2E-1").as_double(), 0.2);
  EXPECT_EQ(*parse_ok("\"abc\"").as_string(), "abc");
  EXPECT_EQ(parse_ok("[]").size(), 0u);
  EXPECT_TRUE(parse_ok("{}").is_object());
}

TEST(Json, SixtyFourBitIntegersKeepEveryBit) {
  const uint64_t max = std::numeric_limits<uint64_t>::max();
  EXPECT_EQ(parse_ok("18446744073709551615").as_uint(), max);
  EXPECT_EQ(parse_ok("140737488355327").as_uint(), 140737488355327u);
  EXPECT_EQ(parse_ok("9007199254740993").as_uint(), 9007199254740993u);  // 2^53 + 1
  EXPECT_EQ(parse_ok("-9223372036854775808").as_int(), std::numeric_limits<int64_t>::min());
  // Past 64 bits it is a (rounded) double, never a wrapped integer.
  const Value big = parse_ok("18446744073709551616");
  EXPECT_EQ(big.type(), Type::Double);
  EXPECT_EQ(big.as_uint(), std::nullopt);
  Value o = Value::object();
  o.set("addr", Value(max));
  o.set("neg", Value(int64_t{-5}));
  const std::string text = write(o);
  EXPECT_EQ(text, "{\"addr\":18446744073709551615,\"neg\":-5}");
  EXPECT_EQ(parse_ok(text), o);
}

TEST(Json, DoublesRoundTrip) {
  for (double d : {0.1, -2.5, 1e300, 3.0, 123456.789}) {
    const Value back = parse_ok(write(Value(d)));
    EXPECT_EQ(back.type(), Type::Double) << d;
    EXPECT_EQ(back.as_double(), d);
  }
  EXPECT_EQ(write(Value(std::numeric_limits<double>::infinity())), "null");
}

TEST(Json, StringEscapes) {
  EXPECT_EQ(*parse_ok(R"("a\"b\\c\/d\b\f\n\r\t")").as_string(), "a\"b\\c/d\b\f\n\r\t");
  EXPECT_EQ(*parse_ok(R"("\u0041\u00e9\u20ac")").as_string(), "A\xc3\xa9\xe2\x82\xac");
  EXPECT_EQ(*parse_ok(R"("\ud83d\ude00")").as_string(), "\xf0\x9f\x98\x80");
  EXPECT_EQ(*parse_ok(R"("\u0000x")").as_string(), std::string("\0x", 2));
  EXPECT_EQ(*parse_ok("\"\xc3\xa9\"").as_string(), "\xc3\xa9");
  // Every byte below 0x80 survives a round trip.
  std::string all;
  for (int c = 0; c < 0x80; ++c) all.push_back(static_cast<char>(c));
  const std::string text = write(Value(all));
  EXPECT_EQ(*parse_ok(text).as_string(), all);
  EXPECT_EQ(write(Value("\x01")), "\"\\u0001\"");
}

TEST(Json, ObjectsKeepOrderAndNest) {
  const Value v = parse_ok(R"({"b": [1, {"c": null}], "a": "x"})");
  ASSERT_EQ(v.members().size(), 2u);
  EXPECT_EQ(v.members()[0].key, "b");
  EXPECT_EQ(v.members()[1].key, "a");
  const Value* b = v.find("b");
  ASSERT_NE(b, nullptr);
  ASSERT_EQ(b->items().size(), 2u);
  EXPECT_TRUE(b->items()[1].find("c")->is_null());
  EXPECT_EQ(v.find("missing"), nullptr);
  EXPECT_EQ(write(v), R"({"b":[1,{"c":null}],"a":"x"})");
}

TEST(Json, GarbageIsRefusedWithOffsetAndReason) {
  EXPECT_EQ(parse_error(""), "offset 0: unexpected end of input, expected a value");
  EXPECT_EQ(parse_error("   "), "offset 3: unexpected end of input, expected a value");
  EXPECT_EQ(parse_error("nul"), "offset 0: invalid literal");
  EXPECT_EQ(parse_error("tru e"), "offset 0: invalid literal");
  EXPECT_EQ(parse_error("{} x"), "offset 3: unexpected data after the value");
  EXPECT_EQ(parse_error("01"), "offset 0: number with a leading zero");
  EXPECT_EQ(parse_error("1."), "offset 2: expected a digit after the decimal point");
  EXPECT_EQ(parse_error("1e+"), "offset 3: expected a digit in the exponent");
  EXPECT_EQ(parse_error("-"), "offset 0: invalid value");
  EXPECT_EQ(parse_error("+1"), "offset 0: invalid value");
  EXPECT_EQ(parse_error("1e999"), "offset 0: number out of range");
  EXPECT_EQ(parse_error("[1 2]"), "offset 3: expected ',' or ']' in an array");
  EXPECT_EQ(parse_error("[1,]"), "offset 3: invalid value");
  EXPECT_EQ(parse_error("{1:2}"), "offset 1: expected a string key in an object");
  EXPECT_EQ(parse_error("{\"a\" 2}"), "offset 5: expected ':' after an object key");
  EXPECT_EQ(parse_error("{\"a\":1,\"a\":2}"), "offset 7: duplicate key \"a\"");
  EXPECT_EQ(parse_error("\"a\\x\""), "offset 2: invalid escape");
  EXPECT_EQ(parse_error("\"\\u12g4\""), "offset 5: invalid hex digit in a \\u escape");
  EXPECT_EQ(parse_error("\"\\ud800\""), "offset 1: unpaired high surrogate");
  EXPECT_EQ(parse_error("\"\\udc00\""), "offset 1: unpaired low surrogate in a \\u escape");
  EXPECT_EQ(parse_error("\"\\ud800\\u0041\""), "offset 1: high surrogate without a low one");
  EXPECT_EQ(parse_error("\"a\nb\""), "offset 2: unescaped control character in a string");
  EXPECT_EQ(parse_error("\"\xff\""), "offset 1: invalid UTF-8 lead byte in a string");
  EXPECT_EQ(parse_error("\"\xc3\x41\""), "offset 2: invalid UTF-8 continuation byte");
  EXPECT_EQ(parse_error("\"\xe0\x80\x80\""), "offset 1: invalid UTF-8 sequence in a string");
  EXPECT_EQ(parse_error("\"\xed\xa0\x80\""), "offset 1: invalid UTF-8 sequence in a string");
  EXPECT_EQ(parse_error(std::string("\0", 1)), "offset 0: invalid value");
}

TEST(Json, EveryTruncationIsRefused) {
  const std::string doc =
      R"({"server_name":"n\u00e9","buffers":[{"addr":140737488355327,"len":-1.5e3}],)"
      R"("ok":true,"none":null,"s":"\ud83d\ude00"})";
  ASSERT_TRUE(parse(doc).ok());
  for (size_t n = 0; n < doc.size(); ++n) {
    std::string error;
    Result<Value> r = parse(std::string_view(doc).substr(0, n), &error);
    EXPECT_EQ(r.status(), Status::BadData) << "prefix of " << n << " bytes";
    EXPECT_EQ(error.rfind("offset ", 0), 0u) << error;
  }
}

TEST(Json, LimitsAreEnforced) {
  Limits limits;
  limits.max_depth = 3;
  EXPECT_TRUE(parse("[[[1]]]", nullptr, limits).ok());
  EXPECT_EQ(parse_error("[[[[1]]]]", limits), "offset 3: nesting deeper than 3");
  // Deep nesting past the default limit is refused, not a stack overflow.
  const std::string deep(100000, '[');
  EXPECT_EQ(parse_error(deep), "offset 64: nesting deeper than 64");
  limits = Limits{};
  limits.max_size = 8;
  EXPECT_EQ(parse_error("\"123456789\"", limits),
            "offset 8: input of 11 bytes exceeds the limit of 8");
  limits = Limits{};
  limits.max_string = 4;
  EXPECT_TRUE(parse("\"1234\"", nullptr, limits).ok());
  EXPECT_EQ(parse_error("\"123456\"", limits), "offset 0: string longer than 4 bytes");
}

TEST(Json, BuildingValues) {
  Value v;
  v.set("k", Value("v"));
  v.set("k", Value(2));  // replaces
  Value& list = v.set("list", Value::array());
  list.push_back(Value(true));
  list.push_back(Value());
  EXPECT_EQ(write(v), R"({"k":2,"list":[true,null]})");
  EXPECT_EQ(v.size(), 2u);
  EXPECT_STREQ(type_name(Type::UInt), "unsigned integer");
}

}  // namespace
}  // namespace mc::ucs::json
