#!/usr/bin/env bash
# Run HERE (a Debian 12 machine with the network), before tests/gpu/check.sh goes to a GPU machine
# that has CUDA, a compiler, CMake and Python with PyTorch but no Debian packages: downloads the
# libraries and headers unmask builds against (fmt, nlohmann-json, doctest, Google Benchmark,
# PCRE2, utf8proc, yaml-cpp, pkgconf) and unpacks them under .debs/gpu/root (ignored by git).
# Carry `.debs/gpu/root` with the device tool; check.sh finds it there.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=.debs/gpu/root
mkdir -p .debs/gpu "$root"
packages=(libfmt-dev libfmt9 nlohmann-json3-dev doctest-dev libbenchmark-dev libbenchmark1debian
          libpcre2-dev libpcre2-8-0 libpcre2-16-0 libpcre2-32-0 libpcre2-posix3 libutf8proc-dev libutf8proc2
          libyaml-cpp-dev libyaml-cpp0.7 pkgconf pkgconf-bin libpkgconf3)
(cd .debs/gpu && apt-get download "${packages[@]}")
for deb in .debs/gpu/*.deb; do dpkg-deb -x "$deb" "$root"; done
# The packages' absolute symlinks (libfoo.so -> /usr/lib/...) would point outside the folder.
find "$root" -type l | while read -r link; do
  target=$(readlink "$link")
  if [[ $target == /* ]]; then ln -sfn "$(realpath -m --relative-to="$(dirname "$link")" "$root$target")" "$link"; fi
done
du -sh "$root"
