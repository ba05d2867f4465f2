#!/bin/sh
# Runs the Rust example (cargo, offline; UNMASK_LIB_DIR and LD_LIBRARY_PATH set by CTest) and
# checks what it prints. usage: check_output.sh CARGO
set -eu
out=$("$1" run --offline --quiet --manifest-path "$(dirname "$0")/Cargo.toml" --example tool_calls) ||
    { echo "the example failed:"; echo "$out"; exit 1; }
echo "$out"
expect() {
    echo "$out" | grep -q -- "$1" || { echo "FAILED: the output lacks: $1"; exit 1; }
}
expect '^unmask 0\.'
expect '^generate: {"name": "book_table", "arguments": {"restaurant": "Sakura", "people": 4, "time": "19:30"}} (48 steps)$'
expect '^  block 4 of "Set a timer for 12 minutes for the oven." committed$'
expect '^engine: Set a timer .* -> {"name": "set_timer", "arguments": {"minutes": 12, "label": "oven"}}$'
expect '^engine: Drop alice@corp.io .* -> {"name": "send_email", "arguments": {"to": "alice@corp.io", "subject": "travel plans"}}$'
