#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Regenerates the configuration reference in docs/configuration.md from the
# config tables (mc_info -M), between the "BEGIN/END CONFIG REFERENCE" markers.
#   contrib/gen-config-doc.sh [--check] [build-dir]
# With --check, fails when docs/configuration.md is out of date instead of
# writing it.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
check=no
if [ "${1:-}" = --check ]; then check=yes; shift; fi
build_dir=${1:-$top/build}
page=$top/docs/configuration.md

for marker in '<!-- BEGIN CONFIG REFERENCE' '<!-- END CONFIG REFERENCE'; do
  if [ "$(grep -c -F "$marker" "$page")" != 1 ]; then
    echo "$page: needs exactly one line with '$marker -->'" >&2
    exit 1
  fi
done

generated=$(mktemp)
trap 'rm -f "$generated" "$generated.new"' EXIT
"$build_dir/src/tools/info/mc_info" -M > "$generated"

awk -v gen="$generated" '
  /<!-- BEGIN CONFIG REFERENCE/ { print; while ((getline line < gen) > 0) print line; skip = 1; next }
  /<!-- END CONFIG REFERENCE/ { skip = 0 }
  !skip { print }
' "$page" > "$generated.new"

if [ "$check" = yes ]; then
  if diff -u "$page" "$generated.new"; then
    echo "docs/configuration.md reference is up to date"
  else
    echo "docs/configuration.md reference is stale: run contrib/gen-config-doc.sh"
    exit 1
  fi
else
  cp "$generated.new" "$page"
  echo "docs/configuration.md reference regenerated"
fi
