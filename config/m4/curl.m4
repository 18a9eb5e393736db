# SPDX-License-Identifier: Apache-2.0
# libcurl: the HTTP and etcd metadata backends.
AC_DEFUN([MC_CHECK_CURL], [
  MC_CHECK_DEP([curl], [libcurl],
    [#include <curl/curl.h>], [curl_easy_init();], [-lcurl])
])
