#!/bin/sh
# Runs the C++ example against the bundled model and checks what it prints: the synchronous
# answer, the engine's answers with their streamed blocks, and the failure as an exception.
# usage: check_output.sh PATH_TO_unmask-example-cpp
set -eu
out=$("$1") || { echo "the example failed:"; echo "$out"; exit 1; }
echo "$out"
expect() {
    echo "$out" | grep -q -- "$1" || { echo "FAILED: the output lacks: $1"; exit 1; }
}
expect '^model: llada, 3109632 parameters$'
expect '^generate: {"name": "book_table", "arguments": {"restaurant": "Sakura", "people": 4, "time": "19:30"}} (48 steps)$'
expect '^engine: Set a timer .* -> {"name": "set_timer", "arguments": {"minutes": 12, "label": "oven"}} (4 blocks streamed)$'
expect '^engine: Drop alice@corp.io .* -> {"name": "send_email", "arguments": {"to": "alice@corp.io", "subject": "travel plans"}} (4 blocks streamed)$'
expect '^stats: 2 requests, '
expect '^error: unmask_generate: INVALID_ARGUMENT: .*not a multiple of block_length 5 (status 1)$'
