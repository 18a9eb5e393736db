// SPDX-License-Identifier: Apache-2.0
// The precompiled header (src/pch/Makefile.am): the standard headers and
// glog's that most of mc's files include, parsed once per build tree
// instead of once per file. Every C++ file of the build is compiled with
// -include mc_pch.h (configure --enable-pch; GCC, not the default), so a
// file still includes what it uses itself: this list only saves time.
#ifndef MC_PCH_H  // a guard, not #pragma once, which GCC refuses in the header it precompiles
#define MC_PCH_H

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <ostream>
#include <set>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include <glog/logging.h>

#endif  // MC_PCH_H
