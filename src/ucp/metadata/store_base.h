// SPDX-License-Identifier: Apache-2.0
// What every backend's Store shares: the last error, logged once, kept for
// last_error().
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
  /// Logs `text` at error level, keeps it, returns `status`.
  Status fail(Status status, const std::string& text) const {
    MC_LOG(error) << "metadata: " << text;
    std::lock_guard<std::mutex> guard(error_lock_);
    last_error_ = text;
    return status;
  }

 private:
  mutable std::mutex error_lock_;  // guards last_error_
  mutable std::string last_error_;
};

}  // namespace mc::metadata
