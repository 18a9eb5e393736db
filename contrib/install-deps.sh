#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs every Debian package that mc's build and tests need; the only way
# anything gets installed. Idempotent: packages already present are left
# alone, and apt is only asked when something is missing. CUDA is optional
# and comes from /usr/local/cuda.
#   contrib/install-deps.sh            the build and the tests
#   contrib/install-deps.sh --bench    also the peers bench-compare measures against
#   contrib/install-deps.sh --fresh-check  also what contrib/fresh-check.sh needs
#   contrib/install-deps.sh --deb      also what contrib/deb-check.sh needs (Debian packages)
#   contrib/install-deps.sh --packages the package names, one a line (nothing installed);
#                                      after --bench, --fresh-check or --deb, with that set's
#   contrib/install-deps.sh --programs the programs table below (nothing installed)
set -euo pipefail

# The build: compilers, autotools, and the libraries configure looks for.
build_pkgs=(
  build-essential g++ clang make autoconf automake libtool pkg-config
  libgtest-dev libgmock-dev googletest libbenchmark-dev
  libgoogle-glog-dev libgflags-dev
  libcurl4-openssl-dev libhiredis-dev
  libibverbs-dev rdma-core ibverbs-providers librdmacm-dev
  liburing-dev libnuma-dev
  libclang-rt-14-dev help2man
  python3-dev pybind11-dev
)
# The programs the tests and scripts run, beyond what every Debian system has
# (the packages of priority "required": bash, coreutils, grep, sed, mawk,
# findutils, diffutils, util-linux, mount, e2fsprogs, procps' kill, ...).
test_pkgs=(
  etcd-server etcd-client redis-server redis-tools
  iproute2 iptables procps curl python3 man-db
  golang-go rustc cargo
  python3-pytest python3-numpy
)
# contrib/bench-compare.sh's peers and plot, and the Rust layout check of
# contrib/mooncake-wrappers-check.sh (--bench).
bench_pkgs=(ucx-utils iperf3 gnuplot-nox bindgen)
# contrib/fresh-check.sh's (--fresh-check): a Debian root, and git to clone
# the tree into it.
fresh_pkgs=(debootstrap git)
# contrib/deb-check.sh's (--deb): dpkg-buildpackage -b of debian/, lintian,
# and the build dependencies of python3-mc (debian/control).
deb_pkgs=(debhelper dpkg-dev lintian fakeroot dh-python python3-dev pybind11-dev)

# Which program comes from which package, and who runs it. A program a
# script calls that is in neither this table nor a "required" package is
# named by the test command (contrib/run-tests.sh) as missing; CI runs its
# first stage with PATH holding only what these packages and the "required"
# ones provide (contrib/deps-path.sh).
programs_table() {
  cat <<'EOF'
# program       package          run by
cc              build-essential  configure, make (gcc)
c++             build-essential  configure, make (g++)
g++             g++              test/integration/install_check.sh, plugin_check.sh
gcc             build-essential  test/integration/c_api_check.sh, install_check.sh
clang           clang            contrib/fuzz.sh (libFuzzer builds; clang-14)
clang++         clang            contrib/fuzz.sh
make            make             contrib/build.sh, test/integration/*_check.sh
help2man        help2man         man/Makefile.am (the tools' man pages, from --help)
autoreconf      autoconf         autogen.sh
automake        automake         autogen.sh (through autoreconf)
libtoolize      libtool          autogen.sh (through autoreconf)
pkg-config      pkg-config       configure, test/integration/install_check.sh, plugin_check.sh
etcd            etcd-server      mc_gtest (the Services fixture), netns_metadata_faults.sh
etcdctl         etcd-client      by hand, to inspect what the Transfer Engine published
redis-server    redis-server     mc_gtest (the Services fixture), netns_metadata_faults.sh
redis-cli       redis-tools      by hand, to inspect what the Transfer Engine published
ip              iproute2         test/integration/netns_*.sh, contrib/soak.sh, contrib/fresh-check.sh
tc              iproute2         test/integration/netns_faults.sh (loss)
ss              iproute2         test/integration/free_port.sh, contrib/bench-compare.sh
iptables        iptables         test/integration/netns_faults.sh, contrib/soak.sh
uptime          procps           .ci/run
curl            curl             test/integration/netns_metadata_faults.sh (the HTTP store)
python3         python3          test/integration/info_check.sh (reads mc_info --json), docs_check.sh, python_check.sh (bindings/python: pytest, mc.bench)
man             man-db           test/integration/man_check.sh (renders the man pages)
go              golang-go        test/integration/go_check.sh (bindings/go: go vet, go test)
cargo           cargo            test/integration/rust_check.sh (bindings/rust: cargo build, cargo test)
rustc           rustc            test/integration/rust_check.sh (through cargo)
apt-get         apt              this script
dpkg-query      dpkg             this script, contrib/deps-path.sh
ucx_perftest    ucx-utils        contrib/bench-compare.sh (--bench)
ucx_info        ucx-utils        contrib/bench-compare.sh (--bench)
iperf3          iperf3           contrib/bench-compare.sh (--bench)
gnuplot         gnuplot-nox      contrib/bench-compare.sh --plot (--bench)
bindgen         bindgen          contrib/mooncake-wrappers-check.sh (--bench; Mooncake's Rust types against mc's header)
debootstrap     debootstrap      contrib/fresh-check.sh (--fresh-check)
git             git              contrib/fresh-check.sh (--fresh-check)
dpkg-buildpackage dpkg-dev       contrib/deb-check.sh (--deb)
dh              debhelper        contrib/deb-check.sh, debian/rules (--deb)
lintian         lintian          contrib/deb-check.sh (--deb)
dh_python3      dh-python        debian/rules (dh --with python3), contrib/deb-check.sh (--deb)
fakeroot        fakeroot         dpkg-buildpackage, when a build needs root (--deb)
EOF
}

pkgs=("${build_pkgs[@]}" "${test_pkgs[@]}")
case "${1:-}" in
  "") ;;
  --bench) pkgs+=("${bench_pkgs[@]}") ;;
  --fresh-check) pkgs+=("${fresh_pkgs[@]}") ;;
  --deb) pkgs+=("${deb_pkgs[@]}") ;;
  --packages) printf '%s\n' "${pkgs[@]}"; exit 0 ;;
  --programs) programs_table; exit 0 ;;
  *) echo "install-deps: unknown option '$1' (--bench, --fresh-check, --deb, --packages, --programs)" >&2; exit 2 ;;
esac
# --bench, --fresh-check or --deb, then --packages: the names with that set's.
case "${1:-}:${2:-}" in
  --*:--packages) printf '%s\n' "${pkgs[@]}"; exit 0 ;;
  *:) ;;
  *) echo "install-deps: unknown option '$2' after '$1' (only --packages)" >&2; exit 2 ;;
esac

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
