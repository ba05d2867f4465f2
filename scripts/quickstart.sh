#!/usr/bin/env bash
# From a fresh Debian 12 machine: installs the dependencies, builds unmask and runs the `unmask`
# command. The README's first command.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh build
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DUNMASK_BUILD_TESTS=OFF -DUNMASK_BUILD_BENCH=OFF >/dev/null
cmake --build build -j "${UNMASK_JOBS:-2}" --target unmask_cli
build/examples/cli/unmask version
# Generation with the bundled default model arrives with the decoding and default-model issues.
# Until then, show what unmask reads from a model directory: a tiny generated LLaDA-MoE.
python3 tests/fixtures/make_model_fixtures.py build/quickstart-fixtures >/dev/null
build/examples/cli/unmask inspect build/quickstart-fixtures/good/llada-moe | head -n 20
