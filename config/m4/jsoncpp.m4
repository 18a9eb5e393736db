# SPDX-License-Identifier: Apache-2.0
# jsoncpp: metadata values (segment descriptors) and the etcd JSON gateway.
AC_DEFUN([MC_CHECK_JSONCPP], [
  MC_CHECK_DEP([jsoncpp], [jsoncpp],
    [#include <json/json.h>], [Json::Value v; v@<:@"a"@:>@ = 1;], [-ljsoncpp], [],
    [-I/usr/include/jsoncpp])
])
