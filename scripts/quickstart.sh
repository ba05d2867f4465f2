#!/usr/bin/env bash
# From a fresh Debian 12 machine: installs the dependencies, builds unmask and runs the `unmask`
# command. The README's first command.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh build
# The same build folder and backend as scripts/test.sh (the CPU; docs/cuda.md builds CUDA), so the
# two commands run in either order, and again, on one clone. UNMASK_CMAKE_ARGS adds options, as
# it does for test.sh.
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DUNMASK_CUDA=OFF ${UNMASK_CMAKE_ARGS:-} >/dev/null
cmake --build build -j "${UNMASK_JOBS:-2}" --target unmask_cli
build/examples/cli/unmask version
# The bundled default model (models/toolcall-llada-3m, made by training/): what unmask reads from
# it, then a request answered with a JSON tool call, decoded by diffusion.
build/examples/cli/unmask inspect --verify | sed -n 1,8p
request="What's the weather in Lisbon on May 14?"
echo "request: $request"
build/examples/cli/unmask generate --prompt "$request"   # the chat template applies by default
