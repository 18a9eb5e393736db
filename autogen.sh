#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Generates configure and the Makefile.in files from configure.ac / Makefile.am.
set -e
cd "$(dirname "$0")"
mkdir -p config/aux
autoreconf --install --force -Wall -Wno-portability
