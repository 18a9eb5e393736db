#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Quick start: installs dependencies, builds mc, and runs the main job.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
"$top/contrib/install-deps.sh"
"$top/contrib/build.sh"

build_dir=${BUILD_DIR:-$top/build}
echo
echo "quickstart: mc_info (version, modules, configuration)"
"$build_dir/src/tools/info/mc_info"
