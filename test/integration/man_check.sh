#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The tools' man pages (man/, made by help2man from --help and --version):
# each was made and renders, names its tool and version, and holds every
# option its tool's --help lists; each tool answers --help and --version
# with exit status 0 and --version with one line "TOOL (mc) VERSION".
#   test/integration/man_check.sh <build-dir>
set -uo pipefail

build_dir=${1:?usage: $0 <build-dir>}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
passes=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { echo "ok:   $*"; passes=$((passes + 1)); }

version=$(sed -n 's/^PACKAGE_VERSION = //p' "$build_dir/Makefile")
for entry in info/mc_info:1 perf/mc_perftest:1 uct_check/mc_uct_check:1 \
             metadata/mc_metadata_server:8 metadata/mc_nvmeof_register:8; do
  path=${entry%:*} section=${entry#*:}
  tool=${path#*/}
  bin=$build_dir/src/tools/$path
  page=$build_dir/man/$tool.$section
  if ! "$bin" --help > "$tmp/help" 2>&1; then
    fail "$tool --help exits non-zero"; continue
  fi
  line=$("$bin" --version 2>&1); rc=$?
  if [ $rc -ne 0 ] || [ "$line" != "$tool (mc) $version" ]; then
    fail "$tool --version: exit $rc, '$line' (expected '$tool (mc) $version')"
  else
    pass "$tool --version: $line"
  fi
  if [ ! -s "$page" ]; then
    fail "$tool: no man page $page (help2man missing at configure time?)"; continue
  fi
  # The page as a reader sees it; help2man writes '-' as '\-'.
  if ! man -l "$page" > "$tmp/page" 2> "$tmp/warn" || [ -s "$tmp/warn" ]; then
    fail "$tool.$section does not render cleanly"; sed 's/^/    /' "$tmp/warn" | head -5; continue
  fi
  sed 's/\\-/-/g' "$page" > "$tmp/src"
  if ! grep -q "^\.TH \"*${tool^^}\"* \"*$section\"*" "$tmp/src" || ! grep -qF "$version" "$tmp/src"; then
    fail "$tool.$section: no .TH ${tool^^} $section header or version $version"; continue
  fi
  # Every option --help names (-x, --name), each on the page.
  missing=
  for opt in $(grep -oE '(^|[ ,\[|(])--?[A-Za-z][A-Za-z0-9_-]*' "$tmp/help" | sed 's/^[ ,[|(]//' | sort -u); do
    grep -qF -- "$opt" "$tmp/src" || missing+=" $opt"
  done
  if [ -n "$missing" ]; then
    fail "$tool.$section lacks options of --help:$missing"
  else
    pass "$tool.$section: $(grep -c . "$tmp/page") lines, every option of --help on it"
  fi
done

echo "man_check: $passes passed, $failures failed"
[ $failures -eq 0 ]
