#!/usr/bin/env bash
# Installs the Debian 12 packages unmask needs. Safe to rerun: it installs only what is missing.
# Needs root (or sudo) when something is missing.
# usage: scripts/install-deps.sh [build|test]   (default: test, which includes build)
set -euo pipefail

build_packages=(
  build-essential cmake pkgconf git ca-certificates
  libfmt-dev nlohmann-json3-dev doctest-dev libbenchmark-dev
  libpcre2-dev libutf8proc-dev   # tokenizer: Unicode regexes and normalisation
  libyaml-cpp-dev                # engine: service configuration files in YAML
  libboost-dev libssl-dev        # unmask-server: its HTTP front (Boost.Beast, headers only) and TLS
  python3
)
test_packages=(
  python3-torch              # tests/reference: the PyTorch reference of the forward pass
  python3-jinja2             # tests/template: the reference renderer of chat templates
  libopenblas0-pthread       # a fast BLAS for python3-torch (the references, training/)
  clang libclang-rt-14-dev   # libFuzzer targets
  openssl                    # unmask-server's TLS test makes a self-signed certificate
  prometheus                 # promtool: unmask-server's metrics and deploy/'s alert rules, linted
  haproxy curl               # tests/deploy: a fleet of replicas behind HAProxy (deploy/local-fleet.sh)
  systemd                    # systemd-analyze verifies deploy/systemd's unit
)

case "${1:-test}" in
  build) packages=("${build_packages[@]}") ;;
  test) packages=("${build_packages[@]}" "${test_packages[@]}") ;;
  *) echo "usage: $0 [build|test]" >&2; exit 2 ;;
esac

missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
# The tokenizer references run on node and npm: Debian's when the machine has none of its own.
if [ "${1:-test}" = test ] && ! { command -v node && command -v npm; } >/dev/null 2>&1; then
  missing+=(nodejs npm)
fi
# The Rust bindings' tests need cargo: Debian's when the machine has none of its own.
if [ "${1:-test}" = test ] && ! command -v cargo >/dev/null 2>&1; then
  missing+=(cargo)
fi
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "installing: ${missing[*]}"
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
