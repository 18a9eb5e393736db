// SPDX-License-Identifier: Apache-2.0
// Maps MC_LOG_LEVEL / MC_LOG_DIR onto glog.
#include "ucs/log/log.h"

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>

namespace mc::ucs {

namespace {

std::atomic<LogLevel> g_level{LogLevel::Warn};

const std::vector<std::pair<std::string, LogLevel>>& level_names() {
  // The first name of a level is how it is printed; "warning" is glog's word
  // (Mooncake's MC_LOG_LEVEL takes TRACE/INFO/WARNING/ERROR). Case-insensitive.
  static const std::vector<std::pair<std::string, LogLevel>> names = {
      {"fatal", LogLevel::Fatal}, {"error", LogLevel::Error}, {"warn", LogLevel::Warn},
      {"info", LogLevel::Info},   {"debug", LogLevel::Debug}, {"trace", LogLevel::Trace},
      {"warning", LogLevel::Warn}};
  return names;
}

void apply_level(LogLevel level) {
  switch (level) {
    case LogLevel::Fatal: FLAGS_minloglevel = google::GLOG_FATAL; break;
    case LogLevel::Error: FLAGS_minloglevel = google::GLOG_ERROR; break;
    case LogLevel::Warn: FLAGS_minloglevel = google::GLOG_WARNING; break;
    default: FLAGS_minloglevel = google::GLOG_INFO; break;
  }
  FLAGS_v = level == LogLevel::Trace ? 2 : level == LogLevel::Debug ? 1 : 0;
}

}  // namespace

const config::Table& log_config_table() {
  static const config::Table table(
      "logging", "",
      {config::field("LOG_LEVEL", "warn",
                     "Least severe messages printed; debug and trace add detail from every layer. "
                     "glog's words (TRACE, INFO, WARNING, ERROR) are accepted too, in any case.",
                     &LogConfig::level, config::enum_parser(level_names())),
       config::field("LOG_DIR", "",
                     "Directory for log files; empty logs to standard error. A directory that "
                     "cannot be written falls back to standard error.",
                     &LogConfig::dir, config::string_parser())});
  return table;
}

const char* log_level_name(LogLevel level) {
  for (const auto& [name, l] : level_names()) {
    if (l == level) return name.c_str();
  }
  return "?";
}

void log_set_level(LogLevel level) {
  g_level = level;
  apply_level(level);
}

LogLevel log_level() {
  return g_level;
}

Status log_init(const char* program_name) {
  std::string error;
  Result<config::Sources> sources = config::Sources::from_process(&error);
  if (!sources.ok()) {
    std::fprintf(stderr, "mc: %s\n", error.c_str());
    return sources.status();
  }
  LogConfig cfg{};
  if (is_error(log_config_table().read(&cfg, *sources, &error))) {
    std::fprintf(stderr, "mc: %s\n", error.c_str());
    return Status::InvalidParam;
  }
  FLAGS_logtostderr = true;
  if (!cfg.dir.empty()) {
    struct stat st {};
    if (stat(cfg.dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode) &&
        access(cfg.dir.c_str(), W_OK) == 0) {
      FLAGS_logtostderr = false;
      FLAGS_alsologtostderr = false;
      FLAGS_log_dir = cfg.dir;
    } else {
      std::fprintf(stderr, "mc: MC_LOG_DIR='%s' is not a writable directory; logging to stderr\n",
                   cfg.dir.c_str());
    }
  }
  log_set_level(cfg.level);
  if (!google::IsGoogleLoggingInitialized()) google::InitGoogleLogging(program_name);
  return Status::Ok;
}

}  // namespace mc::ucs
