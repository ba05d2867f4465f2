#!/usr/bin/env bash
# Builds unmask (CPU backend, warnings as errors) and runs every test. The README's test command.
# usage: scripts/test.sh [BUILD_DIR]      (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${1:-build}
jobs=${UNMASK_JOBS:-2}

scripts/install-deps.sh
# Everything on, whatever an earlier configuration of the folder chose.
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release -DUNMASK_CUDA=OFF -DUNMASK_WERROR=ON \
      -DUNMASK_BUILD_TESTS=ON -DUNMASK_BUILD_BENCH=ON -DUNMASK_BUILD_EXAMPLES=ON ${UNMASK_CMAKE_ARGS:-}
cmake --build "$build_dir" -j "$jobs"
ctest --test-dir "$build_dir" --output-on-failure --no-tests=error -j "$jobs" ${UNMASK_CTEST_ARGS:-}
