// SPDX-License-Identifier: Apache-2.0
// Logging: glog underneath, one macro family, level from MC_LOG_LEVEL.
#pragma once

#include <glog/logging.h>

#include <atomic>
#include <string>

#include "ucs/config/table.h"
#include "ucs/status/status.h"

namespace mc::ucs {

/// Log levels of MC_LOG_LEVEL, least to most verbose; debug and trace lines
/// are glog INFO lines.
enum class LogLevel { Fatal, Error, Warn, Info, Debug, Trace };

/// The knobs of this file: MC_LOG_LEVEL, MC_LOG_DIR.
struct LogConfig {
  LogLevel level;
  std::string dir;  ///< empty: standard error
};

/// Table of LogConfig, registered by UCS.
const config::Table& log_config_table();

/// Applies MC_LOG_LEVEL and MC_LOG_DIR to glog and initialises it. Only the
/// tools and the test main call this; a library or module never does.
/// Returns InvalidParam (after printing why) when a log variable is invalid.
/// In a program that embeds mc and does not call this, the level is read
/// from MC_LOG_LEVEL at the first line mc logs, and where lines go is the
/// program's glog setting.
Status log_init(const char* program_name);

/// Sets the level at run time (tests, tools' -v flags). Thread-safe: the
/// level is one atomic that every MC_LOG reads, and glog's own flags are not
/// written after log_init.
void log_set_level(LogLevel level);

/// The level in force.
LogLevel log_level();

namespace detail {
/// The LogLevel in force as an int; -1 until log_init, log_set_level or the
/// first log_on. A static of an inline function, not an extern variable: one
/// object in the process (a unique symbol) for every library that logs, and
/// no exported data symbol, which ASan reports as an ODR violation once a
/// second copy of libmc_ucs is loaded (ModuleTest.SecondCopyOfUcsIsDetected).
inline std::atomic<int>& log_level_word() {
  static constinit std::atomic<int> word{-1};
  return word;
}
/// Reads MC_LOG_LEVEL (once) and returns the level in force.
int log_level_first_use();
/// The level in force as an int, MC_LOG_LEVEL read on the first call.
inline int log_level_in_force() {
  const int in_force = log_level_word().load(std::memory_order_relaxed);
  if (in_force < 0) [[unlikely]] return log_level_first_use();
  return in_force;
}
}  // namespace detail

/// True when lines of `level` are printed.
inline bool log_on(LogLevel level) {
  return static_cast<int>(level) <= detail::log_level_in_force();
}

/// "warn" for LogLevel::Warn, and so on.
const char* log_level_name(LogLevel level);

}  // namespace mc::ucs

/// MC_LOG(error|warn|info|debug|trace|fatal) << "lower-case message naming the cause";
/// A line below the level in force is not formatted. Fatal lines always print.
#define MC_LOG(level) MC_LOG_##level##_
#define MC_LOG_fatal_ LOG(FATAL)
#define MC_LOG_error_ MC_LOG_IF_ON_(ERROR, Error)
#define MC_LOG_warn_ MC_LOG_IF_ON_(WARNING, Warn)
#define MC_LOG_info_ MC_LOG_IF_ON_(INFO, Info)
#define MC_LOG_debug_ MC_LOG_IF_ON_(INFO, Debug)
#define MC_LOG_trace_ MC_LOG_IF_ON_(INFO, Trace)
#define MC_LOG_IF_ON_(severity, level) LOG_IF(severity, ::mc::ucs::log_on(::mc::ucs::LogLevel::level))

/// Logs at most once per call site per process (e.g. "no CUDA device"); a
/// line below the level in force does not use up the once.
#define MC_LOG_ONCE(level) MC_LOG_ONCE_##level##_
#define MC_LOG_ONCE_error_ MC_LOG_ONCE_IF_ON_(ERROR, Error)
#define MC_LOG_ONCE_warn_ MC_LOG_ONCE_IF_ON_(WARNING, Warn)
#define MC_LOG_ONCE_info_ MC_LOG_ONCE_IF_ON_(INFO, Info)
#define MC_LOG_ONCE_IF_ON_(severity, level)                                       \
  LOG_IF(severity, ::mc::ucs::log_on(::mc::ucs::LogLevel::level) && [] {          \
    static std::atomic<bool> logged{false};                                       \
    return !logged.exchange(true, std::memory_order_relaxed);                     \
  }())

/// True when MC_LOG(debug) / MC_LOG(trace) output is on, to skip costly formatting.
#define MC_LOG_IS_ON(level) MC_LOG_IS_ON_##level##_
#define MC_LOG_IS_ON_debug_ ::mc::ucs::log_on(::mc::ucs::LogLevel::Debug)
#define MC_LOG_IS_ON_trace_ ::mc::ucs::log_on(::mc::ucs::LogLevel::Trace)
