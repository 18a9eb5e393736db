// SPDX-License-Identifier: Apache-2.0
// What every backend's Store shares: the last error, logged once per outage
// (the same text again before a request succeeds is logged at debug level:
// an engine's refresher and its callers must not repeat it every tick), kept
// for last_error().
#pragma once

#include <mutex>
#include <string>

#include "ucp/metadata/store.h"
#include "ucs/log/log.h"

namespace mc::metadata {

class StoreBase : public Store {
 public:
  std::string last_error() const override {
    std::lock_guard<std::mutex> guard(error_lock_);
    return last_error_;
  }

 protected:
  /// Logs `text` at error level unless it repeats the error logged last
  /// with no success in between; keeps it; returns `status`.
  Status fail(Status status, const std::string& text) const {
    bool repeated = false;
    {
      std::lock_guard<std::mutex> guard(error_lock_);
      repeated = text == logged_;
      last_error_ = text;
      logged_ = text;
    }
    if (repeated) {
      MC_LOG(debug) << "metadata: " << text << " (again)";
    } else {
      MC_LOG(error) << "metadata: " << text;
    }
    return status;
  }

  /// A request reached the server: the next error is logged again.
  void succeeded() const {
    std::lock_guard<std::mutex> guard(error_lock_);
    logged_.clear();
  }

 private:
  mutable std::mutex error_lock_;  // guards last_error_ and logged_
  mutable std::string last_error_;
  mutable std::string logged_;  // the error logged last, "" after a success
};

}  // namespace mc::metadata
