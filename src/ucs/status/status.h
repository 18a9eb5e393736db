// SPDX-License-Identifier: Apache-2.0
// Status codes and Result<T>: the one error channel of every mc layer.
#pragma once

#include <cassert>
#include <cstdint>
#include <ostream>
#include <string_view>
#include <utility>
#include <variant>

namespace mc::ucs {

/// Outcome of an operation. `Ok` and `InProgress` are not errors; every
/// negative value is. Values are stable: they cross the C API and modules.
enum class [[nodiscard]] Status : int8_t {
  Ok = 0,
  InProgress = 1,     ///< started; completion is reported later
  NoResource = -2,    ///< out of credits or buffers: progress, then retry
  Unreachable = -3,   ///< no transport or path reaches the peer
  InvalidParam = -4,  ///< a caller's argument or an input value is bad
  IoError = -5,       ///< a system call or device failed
  Timeout = -6,       ///< a deadline passed
  Canceled = -7,      ///< canceled by the user or by a close
  Unsupported = -8,   ///< the operation is not offered here
  NoMemory = -9,      ///< an allocation failed
  NoDevice = -10,     ///< no device of the requested kind exists
  NoElem = -11,       ///< the key, entry or name is not known
  Busy = -12,         ///< the resource is in use
  ConnectionReset = -13,  ///< the peer went away
  Exists = -14,       ///< the key or name is already present
  MessageTruncated = -15, ///< a buffer was too small for the data
  VersionMismatch = -16,  ///< an ABI or wire version is not the one expected
  BadData = -17,      ///< a decoder found malformed, truncated or forged input
  Rejected = -18,     ///< the peer refused the request
};

/// Human-readable text of a status, e.g. "no resource". Never null.
const char* status_string(Status status);

/// Writes status_string(status), for logs and test failures.
inline std::ostream& operator<<(std::ostream& os, Status status) {
  return os << status_string(status);
}

/// True for every negative status.
constexpr bool is_error(Status status) { return static_cast<int8_t>(status) < 0; }

/// A value or an error status. `Result<T>` never holds `Ok` without a value.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : state_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : state_(status) {        // NOLINT: implicit by design
    assert(status != Status::Ok && "Result<T>(Status::Ok) has no value");
  }

  bool ok() const { return std::holds_alternative<T>(state_); }
  explicit operator bool() const { return ok(); }
  Status status() const { return ok() ? Status::Ok : std::get<Status>(state_); }

  T& value() & { return std::get<T>(state_); }
  const T& value() const& { return std::get<T>(state_); }
  T&& value() && { return std::get<T>(std::move(state_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  /// The value, or `fallback` when this holds an error.
  T value_or(T fallback) const& { return ok() ? value() : std::move(fallback); }

 private:
  std::variant<T, Status> state_;
};

namespace detail {
inline Status to_status(Status s) { return s; }
template <typename T>
Status to_status(const Result<T>& r) { return r.status(); }
}  // namespace detail

}  // namespace mc::ucs

/// Returns the status of `expr` from the enclosing function when it is an error.
#define MC_RETURN_IF_ERROR(expr)                                       \
  do {                                                                 \
    const ::mc::ucs::Status mc_status_ = ::mc::ucs::detail::to_status(expr); \
    if (::mc::ucs::is_error(mc_status_)) return mc_status_;            \
  } while (0)

#define MC_CONCAT_INNER_(a, b) a##b
#define MC_CONCAT_(a, b) MC_CONCAT_INNER_(a, b)

/// `MC_ASSIGN_OR_RETURN(auto x, make_x())`: binds the value or returns the error.
#define MC_ASSIGN_OR_RETURN(lhs, expr) \
  MC_ASSIGN_OR_RETURN_IMPL_(MC_CONCAT_(mc_result_, __LINE__), lhs, expr)
#define MC_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                              \
  if (!tmp.ok()) return tmp.status();             \
  lhs = std::move(tmp).value()
