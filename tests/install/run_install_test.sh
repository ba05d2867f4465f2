#!/usr/bin/env bash
# Installs the built tree into a temporary prefix, then builds and runs a consumer program against
# it twice: with CMake's find_package(unmask) (shared and static) and with pkg-config.
# usage: run_install_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build_dir=$1
source_dir=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cmake --install "$build_dir" --prefix "$work/prefix" >/dev/null
lib_dir=$(find "$work/prefix" -name 'libunmask.so' -printf '%h\n' | head -n 1)

echo "== find_package(unmask)"
cmake -S "$source_dir/tests/install/consumer" -B "$work/cmake-build" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/cmake-build" >/dev/null
LD_LIBRARY_PATH="$lib_dir" "$work/cmake-build/consumer_shared"
"$work/cmake-build/consumer_static"

echo "== pkg-config unmask"
export PKG_CONFIG_PATH="$lib_dir/pkgconfig"
cc -std=c99 -pedantic -Wall -Werror $(pkg-config --cflags unmask) "$source_dir/tests/install/consumer/main.c" \
   -o "$work/pkgconfig-consumer" $(pkg-config --libs unmask)
LD_LIBRARY_PATH="$lib_dir" "$work/pkgconfig-consumer"
echo "install test passed"
