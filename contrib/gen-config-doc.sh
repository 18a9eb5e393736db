#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Regenerates the configuration reference in README.md from the config tables
# (mc_info -M), between the "BEGIN/END CONFIG REFERENCE" markers.
#   contrib/gen-config-doc.sh [--check] [build-dir]
# With --check, fails when README.md is out of date instead of writing it.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
check=no
if [ "${1:-}" = --check ]; then check=yes; shift; fi
build_dir=${1:-$top/build}
readme=$top/README.md

generated=$(mktemp)
trap 'rm -f "$generated" "$generated.new"' EXIT
"$build_dir/src/tools/info/mc_info" -M > "$generated"

awk -v gen="$generated" '
  /<!-- BEGIN CONFIG REFERENCE/ { print; while ((getline line < gen) > 0) print line; skip = 1; next }
  /<!-- END CONFIG REFERENCE/ { skip = 0 }
  !skip { print }
' "$readme" > "$generated.new"

if [ "$check" = yes ]; then
  if diff -u "$readme" "$generated.new"; then
    echo "README.md configuration reference is up to date"
  else
    echo "README.md configuration reference is stale: run contrib/gen-config-doc.sh"
    exit 1
  fi
else
  cp "$generated.new" "$readme"
  echo "README.md configuration reference regenerated"
fi
