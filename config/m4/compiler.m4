# SPDX-License-Identifier: Apache-2.0
# Compiler flags: C++20, warnings, and the debug / sanitizer build variants.
AC_DEFUN([MC_COMPILER_FLAGS], [
  AC_LANG_PUSH([C++])
  mc_save_CXXFLAGS="$CXXFLAGS"
  CXXFLAGS="$CXXFLAGS -std=c++20"
  AC_MSG_CHECKING([whether $CXX accepts -std=c++20])
  AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#include <span>
#include <concepts>]], [[std::span<int> s; (void)s;]])],
    [AC_MSG_RESULT([yes])],
    [AC_MSG_RESULT([no]); AC_MSG_ERROR([a C++20 compiler is required (g++ >= 11 or clang >= 14)])])
  CXXFLAGS="$mc_save_CXXFLAGS"
  AC_LANG_POP([C++])

  BASE_CXXFLAGS="-std=c++20 -Wall -Wextra -Wno-missing-field-initializers -fno-strict-aliasing"

  AC_ARG_ENABLE([debug],
    [AS_HELP_STRING([--enable-debug], [assertions and leak reports, -O0 -g])],
    [], [enable_debug=no])
  AS_IF([test "$enable_debug" = yes],
    [BASE_CXXFLAGS="$BASE_CXXFLAGS -O0 -g3 -DMC_DEBUG=1"; mc_build_kind=debug],
    [BASE_CXXFLAGS="$BASE_CXXFLAGS -O2 -g -DNDEBUG"; mc_build_kind=release])

  mc_sanitizers=""
  AC_ARG_ENABLE([asan], [AS_HELP_STRING([--enable-asan], [build with AddressSanitizer])],
    [], [enable_asan=no])
  AC_ARG_ENABLE([ubsan], [AS_HELP_STRING([--enable-ubsan], [build with UndefinedBehaviorSanitizer])],
    [], [enable_ubsan=no])
  AC_ARG_ENABLE([tsan], [AS_HELP_STRING([--enable-tsan], [build with ThreadSanitizer])],
    [], [enable_tsan=no])
  AC_ARG_ENABLE([fuzz],
    [AS_HELP_STRING([--enable-fuzz], [build the libFuzzer targets in test/fuzz (clang; implies asan and ubsan)])],
    [], [enable_fuzz=no])
  AS_IF([test "$enable_fuzz" = yes],
    [AS_CASE([`$CXX --version 2>/dev/null | head -n1`], [*clang*], [],
       [AC_MSG_ERROR([--enable-fuzz needs clang: configure with CC=clang CXX=clang++])])
     enable_asan=yes; enable_ubsan=yes])
  AM_CONDITIONAL([MC_FUZZ], [test "$enable_fuzz" = yes])
  AS_IF([test "$enable_tsan" = yes && test "$enable_asan" = yes],
        [AC_MSG_ERROR([--enable-tsan and --enable-asan cannot be combined])])
  AS_IF([test "$enable_asan" = yes], [mc_sanitizers="$mc_sanitizers,address"])
  AS_IF([test "$enable_ubsan" = yes], [mc_sanitizers="$mc_sanitizers,undefined"])
  AS_IF([test "$enable_tsan" = yes], [mc_sanitizers="$mc_sanitizers,thread"])
  AS_IF([test "$enable_fuzz" = yes], [mc_sanitizers="$mc_sanitizers,fuzzer-no-link"])
  mc_sanitizers="${mc_sanitizers#,}"
  # --with-ubsan-skip=CHECKS: UBSan checks left out of an --enable-ubsan
  # build (CI's ASan tree leaves out null,alignment: why and what it saves
  # in docs/testing.md, stage 2).
  AC_ARG_WITH([ubsan-skip],
    [AS_HELP_STRING([--with-ubsan-skip=CHECKS],
      [leave these UBSan checks out (comma-separated names of -fno-sanitize=)])],
    [], [with_ubsan_skip=no])
  AS_CASE([$with_ubsan_skip],
    [no|""], [with_ubsan_skip=""],
    [yes], [AC_MSG_ERROR([--with-ubsan-skip needs the checks to leave out, e.g. --with-ubsan-skip=null,alignment])],
    [AS_IF([test "$enable_ubsan" != yes],
       [AC_MSG_ERROR([--with-ubsan-skip=$with_ubsan_skip needs --enable-ubsan])])])
  SAN_FLAGS=""
  AS_IF([test -n "$mc_sanitizers"],
    [SAN_FLAGS="-fsanitize=$mc_sanitizers -fno-omit-frame-pointer -fno-sanitize-recover=undefined"
     mc_build_kind="$mc_build_kind+$mc_sanitizers"])
  AS_IF([test -n "$with_ubsan_skip"],
    [SAN_FLAGS="$SAN_FLAGS -fno-sanitize=$with_ubsan_skip"
     mc_build_kind="$mc_build_kind, UBSan without $with_ubsan_skip"])
  BASE_CXXFLAGS="$BASE_CXXFLAGS $SAN_FLAGS"
  BASE_LDFLAGS="$SAN_FLAGS"

  AC_ARG_ENABLE([werror], [AS_HELP_STRING([--enable-werror], [treat warnings as errors (CI)])],
    [], [enable_werror=no])
  AS_IF([test "$enable_werror" = yes], [BASE_CXXFLAGS="$BASE_CXXFLAGS -Werror"])

  # The precompiled header (src/pch), --enable-pch: GCC only (clang reads
  # precompiled headers of its own format, and not from a directory of
  # variants). Not the default: GCC 12 loses, for the headers it reads from
  # a precompiled header, that they are system headers when it warns after
  # inlining at -O2 (-Warray-bounds in std::string's operator+, which
  # -Werror makes an error), so the build that checks warnings compiles
  # without it. CI's sanitizer trees and the Debian packages use it.
  AC_ARG_ENABLE([pch],
    [AS_HELP_STRING([--enable-pch],
      [precompile the standard and glog headers once per build tree (src/pch; GCC; default: no)])],
    [], [enable_pch=no])
  AS_IF([test "$enable_pch" = yes],
    [AS_CASE([`$CXX --version 2>/dev/null | head -n1`],
       [*clang*], [AC_MSG_ERROR([--enable-pch needs GCC: $CXX is clang])])])
  AM_CONDITIONAL([MC_PCH], [test "$enable_pch" = yes])
  # The flags the header is precompiled with: those of every compile, less
  # what uses it (the header includes glog's, hence its include path).
  PCH_BUILD_CXXFLAGS="$BASE_CXXFLAGS"
  AC_SUBST([PCH_BUILD_CXXFLAGS])
  AS_IF([test "$enable_pch" = yes],
    [BASE_CXXFLAGS="$BASE_CXXFLAGS -I\$(top_builddir)/src/pch -I\$(top_srcdir)/src/pch \$(GLOG_CPPFLAGS) -include mc_pch.h"])

  AC_SUBST([BASE_CXXFLAGS])
  AC_SUBST([BASE_LDFLAGS])
  AC_DEFINE_UNQUOTED([MC_BUILD_KIND], ["$mc_build_kind"], [release, debug, and sanitizers])
])
