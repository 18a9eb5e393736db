#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs every Debian package that mc's build, tests and benchmarks need.
# Idempotent: packages already present are left alone, and apt is only asked
# when something is missing. CUDA is optional and comes from /usr/local/cuda.
set -euo pipefail

pkgs=(
  build-essential g++ clang make autoconf automake libtool pkg-config
  libgtest-dev libgmock-dev googletest libbenchmark-dev
  libgoogle-glog-dev libgflags-dev
  libjsoncpp-dev libcurl4-openssl-dev libhiredis-dev
  libibverbs-dev rdma-core ibverbs-providers librdmacm-dev
  liburing-dev libnuma-dev
  etcd-server etcd-client redis-server
  iproute2 iptables procps psmisc curl
  libclang-rt-14-dev
)

missing=()
for p in "${pkgs[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#pkgs[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
  sudo=sudo
else
  sudo=
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -q
$sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
# Debian's etcd-server and redis-server packages start system services;
# tests start their own on free loopback ports, so these are not needed.
for svc in etcd redis-server; do
  if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet "$svc" 2>/dev/null; then
    $sudo systemctl stop "$svc" || true
  fi
done
echo "install-deps: done"
