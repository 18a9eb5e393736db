// SPDX-License-Identifier: Apache-2.0
// Status, Result<T> and the propagation macros.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "ucs/status/status.h"

namespace mc::ucs {
namespace {

Result<int> parse_digit(char c) {
  if (c < '0' || c > '9') return Status::InvalidParam;
  return c - '0';
}

Result<int> sum_digits(const std::string& s) {
  int sum = 0;
  for (char c : s) {
    MC_ASSIGN_OR_RETURN(const int d, parse_digit(c));
    sum += d;
  }
  return sum;
}

Status check_all(const std::string& s) {
  MC_RETURN_IF_ERROR(sum_digits(s));
  MC_RETURN_IF_ERROR(s.empty() ? Status::NoElem : Status::Ok);
  return Status::Ok;
}

TEST(Status, StringsAreDistinctAndNamed) {
  EXPECT_STREQ(status_string(Status::Ok), "success");
  EXPECT_STREQ(status_string(Status::NoResource), "no resource");
  EXPECT_STREQ(status_string(Status::Timeout), "timed out");
  EXPECT_STRNE(status_string(Status::IoError), status_string(Status::BadData));
  EXPECT_STREQ(status_string(static_cast<Status>(-100)), "unknown status");
}

TEST(Status, ErrorsAreNegative) {
  EXPECT_FALSE(is_error(Status::Ok));
  EXPECT_FALSE(is_error(Status::InProgress));
  EXPECT_TRUE(is_error(Status::NoResource));
  EXPECT_TRUE(is_error(Status::Canceled));
}

TEST(Status, ResultHoldsValueOrStatus) {
  Result<int> good = parse_digit('7');
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(*good, 7);
  EXPECT_EQ(good.status(), Status::Ok);
  Result<int> bad = parse_digit('x');
  EXPECT_FALSE(bad.ok());
  EXPECT_EQ(bad.status(), Status::InvalidParam);
  EXPECT_EQ(bad.value_or(-1), -1);
}

TEST(Status, MacrosPropagateTheFirstError) {
  EXPECT_EQ(*sum_digits("123"), 6);
  EXPECT_EQ(sum_digits("12x").status(), Status::InvalidParam);
  EXPECT_EQ(check_all("42"), Status::Ok);
  EXPECT_EQ(check_all("4a"), Status::InvalidParam);
  EXPECT_EQ(check_all(""), Status::NoElem);
}

TEST(Status, ResultMovesOnlyTypes) {
  Result<std::unique_ptr<int>> r = std::make_unique<int>(5);
  ASSERT_TRUE(r.ok());
  std::unique_ptr<int> p = std::move(r).value();
  EXPECT_EQ(*p, 5);
}

}  // namespace
}  // namespace mc::ucs
