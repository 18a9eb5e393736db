#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The README's two quick-start commands on a fresh Debian 12, as a new user
# runs them: makes a minimal bookworm root (debootstrap --variant=minbase,
# main only), clones this tree's committed HEAD into /root/mc there, and runs
# ./contrib/quickstart.sh and then ./contrib/run-tests.sh in it as root, with
# a plain environment. Prints both commands' last lines, and exits non-zero
# when either fails. About 35 minutes on 2 cores.
#   contrib/fresh-check.sh [--keep] [--dir DIR] [--mirror URL]
# --keep leaves the root in place; --dir names where to make it (default: a
# new directory under /var/tmp); --mirror is the Debian mirror (default: the
# first bookworm one of this machine's apt sources). The logs (debootstrap's
# and each command's whole output) stay in DIR.logs/.
# Needs root. Mounts, inside the root: the root bind-mounted onto itself (so
# `ip netns` can mount under /run/netns), /proc, /sys, /dev and a fresh
# /dev/shm; all are unmounted afterwards, also on failure. The root gets a
# policy-rc.d that keeps package scripts from starting services (etcd,
# redis) in it, as chroot builders do; the tests start their own.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
keep=no dir="" mirror=""
while [ $# -gt 0 ]; do
  case $1 in
    --keep) keep=yes; shift ;;
    --dir) dir=$2; shift 2 ;;
    --mirror) mirror=$2; shift 2 ;;
    *) echo "fresh-check: unknown option '$1' (--keep, --dir DIR, --mirror URL)" >&2; exit 2 ;;
  esac
done
[ "$(id -u)" -eq 0 ] || { echo "fresh-check: must run as root (debootstrap, chroot, mounts)" >&2; exit 2; }

# The mirror this machine's apt uses for bookworm.
if [ -z "$mirror" ]; then
  mirror=$(awk '
    /^URIs:/ { uri = $2 } /^Suites:/ && / bookworm( |$)/ && uri != "" { print uri; exit }
    /^deb / && $3 == "bookworm" { print $2; exit }' \
    /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null || true)
fi
[ -n "$mirror" ] || { echo "fresh-check: no bookworm mirror in /etc/apt sources; give --mirror URL" >&2; exit 2; }

"$top/contrib/install-deps.sh" --fresh-check

[ -n "$dir" ] || dir=$(mktemp -d /var/tmp/mc-fresh.XXXXXX)
root=$(realpath -m "$dir")
logs=$root.logs
mkdir -p "$logs"
mounted=()

cleanup() {
  local rc=$?
  # Processes left in the root (a server a test did not stop) hold mounts.
  local p
  for p in /proc/[0-9]*; do
    [ "$(readlink "$p/root" 2>/dev/null)" = "$root" ] && kill -9 "${p#/proc/}" 2>/dev/null
  done
  # Namespaces the tests left mounted under the root's /run/netns, then ours
  # in reverse order.
  grep -o " $root/[^ ]*" /proc/mounts | sort -r | while read -r m; do umount -l "$m" 2>/dev/null; done
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount -l "${mounted[i]}" 2>/dev/null || true; done
  if [ "$keep" = yes ]; then
    echo "fresh-check: the root is kept in $root"
  else
    # Only once nothing is mounted below it.
    grep -q " $root[/ ]" /proc/mounts || rm -rf --one-file-system "$root"
  fi
  echo "fresh-check: logs in $logs"
  exit $rc
}
trap cleanup EXIT
mnt() {  # <mount args...> <target>: mounts and remembers the target
  mount "$@"
  mounted+=("${!#}")
}

start=$SECONDS
echo "fresh-check: debootstrap --variant=minbase bookworm into $root (mirror from this machine's apt sources)"
debootstrap --variant=minbase --components=main bookworm "$root" "$mirror" > "$logs/debootstrap.log" 2>&1 ||
  { echo "fresh-check: debootstrap failed:"; tail -20 "$logs/debootstrap.log"; exit 1; }

cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
printf '#!/bin/sh\nexit 101\n' > "$root/usr/sbin/policy-rc.d"
chmod +x "$root/usr/sbin/policy-rc.d"
git clone -q --no-hardlinks "$top" "$root/root/mc"
echo "fresh-check: cloned $(git -C "$top" rev-parse --short HEAD) into /root/mc"

mnt --bind "$root" "$root"
mnt -t proc proc "$root/proc"
mnt -t sysfs sysfs "$root/sys"
mnt --bind /dev "$root/dev"
mnt -t tmpfs -o mode=1777,nosuid,nodev shm "$root/dev/shm"

# run <name> <command>: the command in the root, as a user's login shell has
# it, its output in logs/<name>.log; prints its last lines.
run() {
  local name=$1 cmd=$2 rc=0 t=$SECONDS
  echo
  echo "=== fresh-check: # $cmd ==="
  chroot "$root" /usr/bin/env -i HOME=/root TERM=dumb LANG=C.UTF-8 \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    /bin/bash -c "cd /root/mc && $cmd" > "$logs/$name.log" 2>&1 || rc=$?
  tail -n 8 "$logs/$name.log"
  echo "=== fresh-check: $cmd: exit $rc, $((SECONDS - t)) s ==="
  return $rc
}

qs=0 rt=0
run quickstart ./contrib/quickstart.sh || qs=$?
run run-tests ./contrib/run-tests.sh || rt=$?
echo
echo "fresh-check: quickstart.sh exit $qs, run-tests.sh exit $rt ($(grep -h '^summary:' "$logs/run-tests.log" | tail -1)), $((SECONDS - start)) s"
[ "$qs" -eq 0 ] && [ "$rt" -eq 0 ]
