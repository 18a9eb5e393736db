# SPDX-License-Identifier: Apache-2.0
# MC_CHECK_PYTHON: the Python package (bindings/python), a pybind11 extension.
#   --with-python[=PYTHON]  build it for the interpreter PYTHON (an error when
#                           its headers or pybind11 are missing)
#   --without-python        leave it out
# The default is Debian's /usr/bin/python3 (else the python3 first in PATH)
# when its headers and pybind11's are there. Another python3 first in PATH
# (a pyenv build) is named in the summary, not picked. Sets PYTHON,
# PYTHON_CPPFLAGS, PYTHON_VERSION, pythondir (the interpreter's
# site-packages under $prefix/lib on its sys.path, else its platlib inside the
# prefix, else posix_prefix's lib/pythonX.Y/site-packages under it),
# mc_have_python, mc_why_python, and AM_CONDITIONAL HAVE_PYTHON.
AC_DEFUN([MC_CHECK_PYTHON], [
  AC_ARG_WITH([python],
    [AS_HELP_STRING([--with-python@<:@=PYTHON@:>@],
      [the Python package for interpreter PYTHON (default: /usr/bin/python3 when its headers and pybind11 are there)])],
    [], [with_python=check])
  mc_have_python=no
  PYTHON_CPPFLAGS=""
  PYTHON_VERSION=""
  mc_py_path=$(command -v python3 2>/dev/null)
  AS_CASE([$with_python],
    [no], [mc_why_python="disabled by --without-python"; PYTHON=""],
    [check|yes], [AS_IF([test -x /usr/bin/python3],
                        [PYTHON=/usr/bin/python3; mc_py_why="Debian's"],
                        [PYTHON=$mc_py_path; mc_py_why="first python3 in PATH"])],
    [PYTHON=$with_python; mc_py_why="--with-python"])
  AS_IF([test "$with_python" != no], [
    AC_MSG_CHECKING([for the Python headers and pybind11 of ${PYTHON:-python3}])
    AS_IF([test -z "$PYTHON" || ! "$PYTHON" -c 'import sys' >/dev/null 2>&1],
      [mc_why_python="no interpreter ${PYTHON:-python3}"],
      [mc_py_inc=$("$PYTHON" -c 'import sysconfig; print(sysconfig.get_paths()[["include"]])' 2>/dev/null)
       PYTHON_VERSION=$("$PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[[:2]])' 2>/dev/null)
       # pybind11's headers: Debian's pybind11-dev puts them in /usr/include;
       # a pip-installed pybind11 says where its are.
       mc_pb_inc=$("$PYTHON" -c 'import pybind11; print(pybind11.get_include())' 2>/dev/null)
       PYTHON_CPPFLAGS="-isystem $mc_py_inc${mc_pb_inc:+ -isystem $mc_pb_inc}"
       AC_LANG_PUSH([C++])
       mc_save_CPPFLAGS="$CPPFLAGS"
       CPPFLAGS="$CPPFLAGS $PYTHON_CPPFLAGS"
       AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#include <pybind11/pybind11.h>]], [[]])],
         [mc_have_python=yes],
         [AS_IF([test -f "$mc_py_inc/Python.h"],
                [mc_why_python="$PYTHON $PYTHON_VERSION has no pybind11 headers (pybind11-dev)"],
                [mc_why_python="$PYTHON $PYTHON_VERSION has no headers in $mc_py_inc (python3-dev)"])])
       CPPFLAGS="$mc_save_CPPFLAGS"
       AC_LANG_POP([C++])])
    AC_MSG_RESULT([$mc_have_python])
    AS_IF([test $mc_have_python = no && test "$with_python" != check],
          [AC_MSG_ERROR([--with-python: $mc_why_python])])
  ])
  AS_IF([test $mc_have_python = yes], [
    mc_py_prefix=$prefix
    test "x$mc_py_prefix" = xNONE && mc_py_prefix=$ac_default_prefix
    # The first directory of the interpreter's sys.path that is
    # $prefix/lib/.../site- or dist-packages (Debian's python3:
    # /usr/lib/python3/dist-packages for /usr, where Debian's packages go,
    # /usr/local/lib/python3.X/dist-packages for /usr/local), else the
    # platlib of its own scheme when it lies inside the prefix, else
    # posix_prefix's; relative to the prefix.
    mc_py_rel=$("$PYTHON" -c '
import sys, sysconfig
prefix = sys.argv[[1]].rstrip("/") + "/"
own = sysconfig.get_path("platlib")
on_path = [[p for p in sys.path if p.startswith(prefix + "lib/")
           and p.rstrip("/").endswith(("site-packages", "dist-packages"))]]
if on_path:
    print(on_path[[0]][[len(prefix):]].rstrip("/"))
elif own.startswith(prefix):
    print(own[[len(prefix):]])
else:
    p = sysconfig.get_path("platlib", "posix_prefix", vars={"platbase": prefix, "base": prefix})
    print(p[[len(prefix):]].lstrip("/"))' "$mc_py_prefix")
    AC_SUBST([pythondir], ['${prefix}'/$mc_py_rel])
    mc_py_on_path=$("$PYTHON" -c 'import sys; print("yes" if sys.argv[[1]] in sys.path else "no")' \
                    "$mc_py_prefix/$mc_py_rel")
    mc_why_python="$PYTHON $PYTHON_VERSION ($mc_py_why), into \$prefix/$mc_py_rel"
    AS_IF([test "$mc_py_on_path" = no],
          [mc_why_python="$mc_why_python (not on its sys.path: set PYTHONPATH)"])
  ])
  # A python3 first in PATH that is not the one chosen is said, with why.
  AS_IF([test -n "$mc_py_path" && test "$mc_py_path" != "$PYTHON" &&
         test "$(readlink -f "$mc_py_path")" != "$(readlink -f "${PYTHON:-/nonexistent}")"],
        [mc_why_python="$mc_why_python; $mc_py_path, first in PATH, not used (--with-python=$mc_py_path to use it)"])
  AC_SUBST([PYTHON])
  AC_SUBST([PYTHON_CPPFLAGS])
  AC_SUBST([PYTHON_VERSION])
  AM_CONDITIONAL([HAVE_PYTHON], [test $mc_have_python = yes])
])
