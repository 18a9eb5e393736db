// SPDX-License-Identifier: Apache-2.0
// The extension's one error channel: a StatusError thrown by the binding
// code becomes the mc.errors class of its status (mc.InvalidParamError,
// mc.TimeoutError, ...) at the Python boundary.
#pragma once

#include <pybind11/pybind11.h>

#include <string>

namespace mc::py {

/// mc's status codes the bindings raise on their own (the engine's calls
/// return theirs).
inline constexpr int kNoResource = -2;
inline constexpr int kInvalidParam = -4;
inline constexpr int kTimeout = -6;
inline constexpr int kCanceled = -7;
inline constexpr int kUnsupported = -8;
inline constexpr int kNoElem = -11;
inline constexpr int kBusy = -12;

/// A failed call: mc's negative `status` and a sentence saying what failed.
struct StatusError {
  int status;
  std::string message;
};

/// Throws StatusError(rc, what) when rc is negative; else returns rc.
int check(int rc, const std::string& what);

/// Installs the translator from StatusError to mc.errors.from_status(...).
void bind_errors(pybind11::module_& m);

}  // namespace mc::py
