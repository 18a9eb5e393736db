# SPDX-License-Identifier: Apache-2.0
# MC_CHECK_DEP(name, description, includes, body, libs, [default-dir], [extra-cppflags])
#
# One optional dependency: adds --with-NAME[=DIR] / --without-NAME, tries to
# compile and link a C++ program with INCLUDES and BODY against LIBS, and sets
#   NAME_CPPFLAGS, NAME_LDFLAGS, NAME_LIBS  (substituted)
#   mc_have_NAME=yes|no, mc_why_NAME="reason" (for the summary)
#   AM_CONDITIONAL HAVE_NAME, and HAVE_NAME in config.h when found.
# --with-NAME (or =DIR) makes a missing dependency an error; without it, a
# DEFAULT-DIR that exists is tried, and a miss only leaves the feature out.
AC_DEFUN([MC_CHECK_DEP], [
  m4_pushdef([UP], m4_translit([$1], [a-z-], [A-Z_]))
  AC_ARG_WITH([$1],
    [AS_HELP_STRING([--with-$1@<:@=DIR@:>@], [$2 (default: detect)])],
    [], [with_]m4_translit([$1], [-], [_])[=check])
  mc_with=$[with_]m4_translit([$1], [-], [_])
  UP[]_CPPFLAGS=""
  UP[]_LDFLAGS=""
  UP[]_LIBS=""
  mc_have_[]m4_translit([$1], [-], [_])=no
  AS_CASE([$mc_with],
    [no], [mc_why_[]m4_translit([$1], [-], [_])="disabled by --without-$1"],
    [
      mc_dir=""
      AS_CASE([$mc_with], [yes], [],
        [check], [AS_IF([test -n "$6" && test -d "$6"], [mc_dir="$6"])],
        [mc_dir="$mc_with"])
      AS_IF([test -n "$mc_dir"],
        [UP[]_CPPFLAGS="-I$mc_dir/include"
         AS_IF([test -d "$mc_dir/lib64"],
               [UP[]_LDFLAGS="-L$mc_dir/lib64 -Wl,-rpath,$mc_dir/lib64"],
               [UP[]_LDFLAGS="-L$mc_dir/lib -Wl,-rpath,$mc_dir/lib"])])
      UP[]_CPPFLAGS="$UP[]_CPPFLAGS $7"
      AC_LANG_PUSH([C++])
      mc_save_CPPFLAGS="$CPPFLAGS"; mc_save_LDFLAGS="$LDFLAGS"; mc_save_LIBS="$LIBS"
      CPPFLAGS="$CPPFLAGS $UP[]_CPPFLAGS"; LDFLAGS="$LDFLAGS $UP[]_LDFLAGS"; LIBS="$5 $LIBS"
      AC_MSG_CHECKING([for $2])
      AC_LINK_IFELSE([AC_LANG_PROGRAM([$3], [$4])],
        [mc_have_[]m4_translit([$1], [-], [_])=yes
         UP[]_LIBS="$5"
         mc_why_[]m4_translit([$1], [-], [_])="found"],
        [mc_why_[]m4_translit([$1], [-], [_])="not found (headers or $5 missing; see config.log)"])
      AC_MSG_RESULT([$mc_have_]m4_translit([$1], [-], [_]))
      CPPFLAGS="$mc_save_CPPFLAGS"; LDFLAGS="$mc_save_LDFLAGS"; LIBS="$mc_save_LIBS"
      AC_LANG_POP([C++])
      AS_IF([test "$mc_have_[]m4_translit([$1], [-], [_])" = no && test "$mc_with" != check],
            [AC_MSG_ERROR([--with-$1 was given but $2 was not found])])
    ])
  AS_IF([test "$mc_have_[]m4_translit([$1], [-], [_])" = yes],
        [AC_DEFINE([HAVE_]UP, [1], [Define if $2 is available])])
  AC_SUBST(UP[]_CPPFLAGS)
  AC_SUBST(UP[]_LDFLAGS)
  AC_SUBST(UP[]_LIBS)
  AM_CONDITIONAL([HAVE_]UP, [test "$mc_have_[]m4_translit([$1], [-], [_])" = yes])
  m4_popdef([UP])
])
