// SPDX-License-Identifier: Apache-2.0
// LogCapture: the log lines of a test, for checks that a failure or a choice
// was reported.
#pragma once

#include <glog/logging.h>

#include <mutex>
#include <string>
#include <vector>

namespace mc::test {

/// Collects the log lines at or above `min` from its construction to its
/// destruction (a glog sink). Thread-safe: transports log from their threads.
class LogCapture : public google::LogSink {
 public:
  explicit LogCapture(google::LogSeverity min = google::GLOG_WARNING) : min_(min) {
    google::AddLogSink(this);
  }
  ~LogCapture() override { google::RemoveLogSink(this); }
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;

  void send(google::LogSeverity severity, const char*, const char*, int,
            const google::LogMessageTime&, const char* message, size_t len) override {
    if (severity < min_) return;
    std::lock_guard guard(lock_);
    lines_.emplace_back(message, len);
  }
  std::vector<std::string> lines() {
    std::lock_guard guard(lock_);
    return lines_;
  }
  /// Every line, each ended by a newline.
  std::string text() {
    std::string out;
    for (const std::string& l : lines()) out += l + "\n";
    return out;
  }

 private:
  const google::LogSeverity min_;
  std::mutex lock_;
  std::vector<std::string> lines_;
};

}  // namespace mc::test
