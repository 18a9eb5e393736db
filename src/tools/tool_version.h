// SPDX-License-Identifier: Apache-2.0
// --version of mc's tools: one line, "NAME (mc) VERSION", as users and
// help2man (which makes the man pages from --help and --version) expect.
#pragma once

#include <cstdio>

#include "config.h"

namespace mc::tools {

/// Prints the version line of tool `name` to stdout; returns 0 (the exit status).
inline int print_version(const char* name) {
  std::printf("%s (mc) %s\n", name, PACKAGE_VERSION);
  return 0;
}

}  // namespace mc::tools
