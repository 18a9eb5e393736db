// SPDX-License-Identifier: Apache-2.0
// Logging: MC_LOG_LEVEL parsing and its mapping onto glog.
#include <gtest/gtest.h>

#include "ucs/log/log.h"

namespace mc::ucs::config {
namespace {

TEST(Log, LevelsMapToGlog) {
  const LogLevel saved = log_level();
  log_set_level(LogLevel::Debug);
  EXPECT_TRUE(MC_LOG_IS_ON(debug));
  EXPECT_FALSE(MC_LOG_IS_ON(trace));
  log_set_level(LogLevel::Trace);
  EXPECT_TRUE(MC_LOG_IS_ON(trace));
  log_set_level(LogLevel::Error);
  EXPECT_FALSE(MC_LOG_IS_ON(debug));
  EXPECT_EQ(FLAGS_minloglevel, google::GLOG_ERROR);
  EXPECT_STREQ(log_level_name(LogLevel::Warn), "warn");
  log_set_level(saved);
}

TEST(Log, LevelIsReadFromTheTable) {
  Result<LogConfig> cfg =
      read_table<LogConfig>(log_config_table(), *Sources::from({{"MC_LOG_LEVEL", "TRACE"}}, {}));
  ASSERT_TRUE(cfg.ok());
  EXPECT_EQ(cfg->level, LogLevel::Trace);
  std::string error;
  cfg = read_table<LogConfig>(log_config_table(), *Sources::from({{"MC_LOG_LEVEL", "loud"}}, {}),
                              &error);
  EXPECT_EQ(cfg.status(), Status::InvalidParam);
  EXPECT_NE(error.find("MC_LOG_LEVEL"), std::string::npos);
}

}  // namespace
}  // namespace mc::ucs::config
