#!/usr/bin/env bash
# From a fresh Debian 12 machine: installs the dependencies, builds unmask and runs the `unmask`
# command. The README's first command.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh build
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DUNMASK_BUILD_TESTS=OFF -DUNMASK_BUILD_BENCH=OFF >/dev/null
cmake --build build -j "${UNMASK_JOBS:-2}" --target unmask_cli
build/examples/cli/unmask version
# The bundled default model and the tokenizer arrive with their issues. Until then: a tiny random
# LLaDA-MoE model in Hugging Face layout, what unmask reads from it, and a generation from token
# ids, drawn step by step (random weights, so the ids mean nothing).
python3 tests/fixtures/make_model_fixtures.py build/quickstart-fixtures >/dev/null
build/examples/cli/unmask inspect build/quickstart-fixtures/good/llada-moe | head -n 12
build/examples/cli/unmask generate -m build/quickstart-fixtures/good/llada-moe --prompt-ids 1,2,3,4 \
    --gen-length 16 --steps 8 --block-length 8 --show-steps
