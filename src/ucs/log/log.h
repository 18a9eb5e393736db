// SPDX-License-Identifier: Apache-2.0
// Logging: glog underneath, one macro family, level from MC_LOG_LEVEL.
#pragma once

#include <glog/logging.h>

#include <string>

#include "ucs/config/table.h"
#include "ucs/status/status.h"

namespace mc::ucs {

/// Log levels of MC_LOG_LEVEL; debug and trace map to glog's VLOG(1) / VLOG(2).
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
Status log_init(const char* program_name);

/// Sets the level at run time (tests, tools' -v flags). Thread-safe.
void log_set_level(LogLevel level);

/// The level in force.
LogLevel log_level();

/// "warn" for LogLevel::Warn, and so on.
const char* log_level_name(LogLevel level);

}  // namespace mc::ucs

/// MC_LOG(error|warn|info|debug|trace|fatal) << "lower-case message naming the cause";
#define MC_LOG(level) MC_LOG_##level##_
#define MC_LOG_fatal_ LOG(FATAL)
#define MC_LOG_error_ LOG(ERROR)
#define MC_LOG_warn_ LOG(WARNING)
#define MC_LOG_info_ LOG(INFO)
#define MC_LOG_debug_ VLOG(1)
#define MC_LOG_trace_ VLOG(2)

/// Logs at most once per call site per process (e.g. "no CUDA device").
#define MC_LOG_ONCE(level) LOG_FIRST_N(MC_LOG_ONCE_SEV_##level##_, 1)
#define MC_LOG_ONCE_SEV_error_ ERROR
#define MC_LOG_ONCE_SEV_warn_ WARNING
#define MC_LOG_ONCE_SEV_info_ INFO

/// True when MC_LOG(debug) / MC_LOG(trace) output is on, to skip costly formatting.
#define MC_LOG_IS_ON(level) MC_LOG_IS_ON_##level##_
#define MC_LOG_IS_ON_debug_ VLOG_IS_ON(1)
#define MC_LOG_IS_ON_trace_ VLOG_IS_ON(2)
