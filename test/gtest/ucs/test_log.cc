// SPDX-License-Identifier: Apache-2.0
// Logging: MC_LOG_LEVEL parsing, what the level lets reach glog; the rate limiter.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "common/log_capture.h"
#include "ucs/log/log.h"
#include "ucs/log/rate_limiter.h"

namespace mc::ucs::config {
namespace {

// What reaches glog is what the level lets through: a line below it is
// dropped before glog sees it, and a once-line below it keeps its once.
TEST(Log, LevelDecidesWhatReachesGlog) {
  const LogLevel saved = log_level();
  mc::test::LogCapture sink(google::GLOG_INFO);
  auto once = [] { MC_LOG_ONCE(info) << "test: the once line"; };
  log_set_level(LogLevel::Error);
  EXPECT_EQ(log_level(), LogLevel::Error);
  EXPECT_FALSE(MC_LOG_IS_ON(debug));
  MC_LOG(warn) << "test: a warning under error";
  MC_LOG(info) << "test: an info line under error";
  once();
  MC_LOG(error) << "test: an error under error";
  log_set_level(LogLevel::Debug);
  EXPECT_TRUE(MC_LOG_IS_ON(debug));
  EXPECT_FALSE(MC_LOG_IS_ON(trace));
  MC_LOG(debug) << "test: a debug line under debug";
  MC_LOG(trace) << "test: a trace line under debug";
  once();
  once();
  log_set_level(LogLevel::Trace);
  EXPECT_TRUE(MC_LOG_IS_ON(trace));
  log_set_level(saved);
  std::vector<std::string> lines;
  for (const std::string& l : sink.lines()) {
    if (l.rfind("test: ", 0) == 0) lines.push_back(l);
  }
  EXPECT_EQ(lines, (std::vector<std::string>{"test: an error under error",
                                             "test: a debug line under debug",
                                             "test: the once line"}));
  EXPECT_STREQ(log_level_name(LogLevel::Warn), "warn");
}

// The level changes while other threads log (tools' -v, tests): no data race
// (this runs under TSan in CI), debug lines get through while debug is on,
// and trace lines, never on, never do.
TEST(Log, LevelChangesWhileThreadsLog) {
  const LogLevel saved = log_level();
  mc::test::LogCapture sink(google::GLOG_INFO);
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&stop] {
      while (!stop.load()) {
        MC_LOG(debug) << "test: threads' debug line";
        if (MC_LOG_IS_ON(trace)) MC_LOG(trace) << "test: threads' trace line";
        std::this_thread::sleep_for(std::chrono::microseconds(200));  // a few hundred lines
      }
    });
  }
  for (int i = 0; i < 200; ++i) {
    log_set_level(i % 2 ? LogLevel::Debug : LogLevel::Warn);
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  log_set_level(LogLevel::Debug);
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  stop = true;
  for (std::thread& th : threads) th.join();
  log_set_level(saved);
  size_t debug_lines = 0, trace_lines = 0;
  for (const std::string& l : sink.lines()) {
    debug_lines += l == "test: threads' debug line";
    trace_lines += l == "test: threads' trace line";
  }
  EXPECT_GT(debug_lines, 0u);
  EXPECT_EQ(trace_lines, 0u);
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

// Mooncake's MC_LOG_LEVEL takes glog's words (TRACE/INFO/WARNING/ERROR), in
// any case; "warning" is printed back as mc's "warn".
TEST(Log, GlogWordsAreAcceptedInAnyCase) {
  const std::vector<std::pair<std::string, LogLevel>> words = {
      {"TRACE", LogLevel::Trace},  {"INFO", LogLevel::Info},    {"WARNING", LogLevel::Warn},
      {"Warning", LogLevel::Warn}, {"warning", LogLevel::Warn}, {"ERROR", LogLevel::Error},
      {"eRrOr", LogLevel::Error}};
  for (const auto& [word, level] : words) {
    Result<LogConfig> cfg =
        read_table<LogConfig>(log_config_table(), *Sources::from({{"MC_LOG_LEVEL", word}}, {}));
    ASSERT_TRUE(cfg.ok()) << word;
    EXPECT_EQ(cfg->level, level) << word;
  }
  EXPECT_STREQ(log_level_name(LogLevel::Warn), "warn");
  std::string error;
  EXPECT_EQ(read_table<LogConfig>(log_config_table(),
                                  *Sources::from({{"MC_LOG_LEVEL", "WARNINGS"}}, {}), &error)
                .status(),
            Status::InvalidParam);
  EXPECT_NE(error.find("MC_LOG_LEVEL"), std::string::npos) << error;
}

TEST(LogRateLimiter, LogsOncePerIntervalAndCountsWhatItHeldBack) {
  using namespace std::chrono_literals;
  RateLimiter limiter(1s);
  const RateLimiter::Clock::time_point t0{};
  RateLimiter::Verdict v = limiter.check(t0);
  EXPECT_TRUE(v.log);
  EXPECT_EQ(v.suppressed, 0u);
  for (int i = 1; i <= 1000; ++i) {
    EXPECT_FALSE(limiter.check(t0 + i * 500us).log) << i;
  }
  v = limiter.check(t0 + 1s);
  EXPECT_TRUE(v.log);
  EXPECT_EQ(v.suppressed, 1000u);
  EXPECT_FALSE(limiter.check(t0 + 1500ms).log);
  // A quiet spell: the next event is logged at once, naming the one held back.
  v = limiter.check(t0 + 60s);
  EXPECT_TRUE(v.log);
  EXPECT_EQ(v.suppressed, 1u);
  EXPECT_EQ(v.note(), " (1 more since the last report)");
  v = limiter.check(t0 + 62s);
  EXPECT_TRUE(v.log);
  EXPECT_EQ(v.suppressed, 0u);
  EXPECT_EQ(v.note(), "");
}

TEST(LogRateLimiter, BurstLetsThatManyThroughPerInterval) {
  using namespace std::chrono_literals;
  RateLimiter limiter(100ms, 3);
  const RateLimiter::Clock::time_point t0{};
  int logged = 0;
  for (int i = 0; i < 10; ++i) logged += limiter.check(t0 + i * 1ms).log;
  EXPECT_EQ(logged, 3);
  RateLimiter::Verdict v = limiter.check(t0 + 100ms);
  EXPECT_TRUE(v.log);
  EXPECT_EQ(v.suppressed, 7u);
}

TEST(LogRateLimiter, CountsEveryEventAcrossThreads) {
  RateLimiter limiter(std::chrono::hours(1));
  std::atomic<uint64_t> logged{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10000; ++i) logged += limiter.check().log;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(logged.load(), 1u);
  // Everything held back is reported by the next logged event.
  RateLimiter::Verdict v = limiter.check(RateLimiter::Clock::now() + std::chrono::hours(2));
  EXPECT_TRUE(v.log);
  EXPECT_EQ(v.suppressed, 39999u);
}

}  // namespace
}  // namespace mc::ucs::config
