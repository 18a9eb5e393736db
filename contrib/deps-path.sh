#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Makes a directory that holds only the programs a fresh Debian 12 has once
# contrib/install-deps.sh has run: those of the packages it installs, of
# every package they depend on, and of the packages of priority "required"
# (what every Debian system has). Programs installed some other way (by
# hand, pyenv, rustup, /usr/local) are left out, and so are those of Debian
# packages nothing here asks for. With PATH set to that directory, a script
# that calls a program install-deps.sh does not provide fails the way it
# would on a fresh machine. CI's first stage runs that way.
#   contrib/deps-path.sh DIR [--bench|--fresh-check|--deb]
# With an option: also the packages install-deps.sh installs with it (CI's
# package stage runs with --deb's).
# Prints DIR's path last.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:?usage: contrib/deps-path.sh DIR [--bench|--fresh-check|--deb]}
set=${2:-}

wanted=$(mktemp)
trap 'rm -f "$wanted"' EXIT
"$top/contrib/install-deps.sh" ${set:+"$set"} --packages > "$wanted"

# The closure over Depends and Pre-Depends of the installed packages, each
# alternative and virtual package taken by every installed package that
# provides it. A wanted package that is not installed is an error: run
# install-deps.sh first.
closure=$(
  dpkg-query -W -f='${db:Status-Status}\t${Package}\t${Priority}\t${Essential}\t${Pre-Depends}, ${Depends}\t${Provides}\n' |
  awk -F'\t' -v wanted="$wanted" '
    function bare(s) { gsub(/\(.*\)|:[a-z0-9]+|[ \t]/, "", s); return s }
    $1 == "installed" {
      inst[$2] = 1; deps[$2] = $5
      if ($3 == "required" || $4 == "yes") queue[++n] = $2
      m = split($6, pv, ","); for (i = 1; i <= m; i++) { p = bare(pv[i]); if (p != "") prov[p] = prov[p] " " $2 }
    }
    END {
      while ((getline w < wanted) > 0) {
        if (!(w in inst)) { print "deps-path: " w " is not installed (run contrib/install-deps.sh)" > "/dev/stderr"; bad = 1 }
        queue[++n] = w
      }
      if (bad) exit 1
      for (q = 1; q <= n; q++) {
        p = queue[q]; if (p in seen) continue; seen[p] = 1; print p
        g = split(deps[p], groups, ",")
        for (i = 1; i <= g; i++) {
          a = split(groups[i], alts, "|")
          for (j = 1; j <= a; j++) {
            d = bare(alts[j]); if (d == "") continue
            if (d in inst) queue[++n] = d
            if (d in prov) { k = split(prov[d], pp, " "); for (l = 1; l <= k; l++) queue[++n] = pp[l] }
          }
        }
      }
    }')

# The real files of the closure's programs; a program of the system's bin
# directories is linked when its real file is one of them (so awk, cc and
# other alternatives count as the package behind them).
own=$(mktemp)
trap 'rm -f "$wanted" "$own" "$own.all"' EXIT
# shellcheck disable=SC2086
dpkg-query -L $closure 2>/dev/null | grep -E '/s?bin/[^/]+$' | xargs -r realpath -m -- | sort -u > "$own"

rm -rf "$dir"
mkdir -p "$dir"
# Each program of the bin directories, first directory first, with its real
# file: "path<TAB>real".
for bindir in /usr/local/sbin /usr/local/bin /usr/sbin /usr/bin /sbin /bin; do
  [ -d "$bindir" ] && find "$bindir" -maxdepth 1 \( -type f -o -type l \) -print
done > "$own.all"
realpath -m -- $(cat "$own.all") | paste "$own.all" - |
  awk -F'\t' -v own="$own" -v dir="$dir" '
    BEGIN { while ((getline f < own) > 0) mine[f] = 1 }
    { n = $1; sub(/.*\//, "", n) }
    !(n in done) && ($2 in mine) { done[n] = 1; print $1 "\t" dir "/" n }' |
  while IFS=$'\t' read -r from to; do ln -s "$from" "$to"; done
count=$(find "$dir" -mindepth 1 | wc -l)
echo "deps-path: $count programs from $(wc -w <<< "$closure") packages" >&2
echo "$dir"
