// SPDX-License-Identifier: Apache-2.0
// MC_LOG_LEVEL as the one atomic every MC_LOG reads; MC_LOG_DIR onto glog.
#include "ucs/log/log.h"

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>

namespace mc::ucs {

namespace {

constexpr LogLevel kDefaultLevel = LogLevel::Warn;

const std::vector<std::pair<std::string, LogLevel>>& level_names() {
  // The first name of a level is how it is printed; "warning" is glog's word
  // (Mooncake's MC_LOG_LEVEL takes TRACE/INFO/WARNING/ERROR). Case-insensitive.
  static const std::vector<std::pair<std::string, LogLevel>> names = {
      {"fatal", LogLevel::Fatal}, {"error", LogLevel::Error}, {"warn", LogLevel::Warn},
      {"info", LogLevel::Info},   {"debug", LogLevel::Debug}, {"trace", LogLevel::Trace},
      {"warning", LogLevel::Warn}};
  return names;
}

/// MC_LOG_LEVEL from the process's environment and configuration files;
/// `error` says why when it cannot be read (nothing is logged here: this
/// runs inside the first MC_LOG).
Result<LogConfig> read_log_config(std::string* error) {
  Result<config::Sources> sources = config::Sources::from_process(error);
  if (!sources.ok()) return sources.status();
  LogConfig cfg{};
  if (is_error(log_config_table().read(&cfg, *sources, error))) return Status::InvalidParam;
  return cfg;
}

}  // namespace

namespace detail {

int log_level_first_use() {
  static const int from_env = [] {
    std::string error;
    Result<LogConfig> cfg = read_log_config(&error);
    if (cfg.ok()) return static_cast<int>(cfg->level);
    std::fprintf(stderr, "mc: %s; logging at %s\n", error.c_str(), log_level_name(kDefaultLevel));
    return static_cast<int>(kDefaultLevel);
  }();
  int unset = -1;
  // log_set_level may have run meanwhile; its level stays.
  log_level_word().compare_exchange_strong(unset, from_env, std::memory_order_relaxed);
  return log_level_word().load(std::memory_order_relaxed);
}

}  // namespace detail

const config::Table& log_config_table() {
  static const config::Table table(
      "logging", "",
      {config::field("LOG_LEVEL", "warn",
                     "Least severe messages printed; debug and trace add detail from every layer. "
                     "glog's words (TRACE, INFO, WARNING, ERROR) are accepted too, in any case. "
                     "mc's programs read it at start; a program that embeds mc (the Python "
                     "package, libtransfer_engine) at the first line mc logs, and a bad value "
                     "there is printed and logging stays at warn.",
                     &LogConfig::level, config::enum_parser(level_names())),
       config::field("LOG_DIR", "",
                     "Directory for the log files of mc's programs (mc_info, mc_perftest, "
                     "mc_metadata_server); empty logs to standard error. A directory that "
                     "cannot be written falls back to standard error. A program that embeds mc "
                     "keeps its own glog settings.",
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
  detail::log_level_word().store(static_cast<int>(level), std::memory_order_relaxed);
}

LogLevel log_level() {
  return static_cast<LogLevel>(detail::log_level_in_force());
}

Status log_init(const char* program_name) {
  std::string error;
  Result<LogConfig> read = read_log_config(&error);
  if (!read.ok()) {
    std::fprintf(stderr, "mc: %s\n", error.c_str());
    return read.status();
  }
  const LogConfig& cfg = *read;
  // glog's own filter lets every line through, and is not written again:
  // MC_LOG_LEVEL decides (log_on).
  FLAGS_minloglevel = google::GLOG_INFO;
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
