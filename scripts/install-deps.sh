#!/usr/bin/env bash
# Installs the Debian 12 packages unmask needs to build and test. Safe to rerun: it installs only
# what is missing. Needs root (or sudo) when something is missing.
set -euo pipefail

packages=(
  build-essential cmake pkgconf git ca-certificates
  libfmt-dev nlohmann-json3-dev doctest-dev libbenchmark-dev
  python3
  clang libclang-rt-14-dev   # libFuzzer targets
)

missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "installing: ${missing[*]}"
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
