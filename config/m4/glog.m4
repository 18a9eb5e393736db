# SPDX-License-Identifier: Apache-2.0
# glog: the logging backend of src/ucs/log. Required.
AC_DEFUN([MC_CHECK_GLOG], [
  MC_CHECK_DEP([glog], [glog (Google logging)],
    [#include <glog/logging.h>], [google::InitGoogleLogging("x");], [-lglog -lgflags])
  AS_IF([test "$mc_have_glog" != yes],
        [AC_MSG_ERROR([glog is required (Debian: libgoogle-glog-dev); run contrib/install-deps.sh])])
])
