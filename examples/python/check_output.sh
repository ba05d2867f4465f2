#!/bin/sh
# Runs the Python example (UNMASK_LIBRARY_PATH set by CTest) and checks what it prints.
set -eu
out=$(/usr/bin/python3 "$(dirname "$0")/example.py") || { echo "the example failed:"; echo "$out"; exit 1; }
echo "$out"
expect() {
    echo "$out" | grep -q -- "$1" || { echo "FAILED: the output lacks: $1"; exit 1; }
}
expect '^plan: [0-9]* bytes of weights, fits: True$'
expect '^generate: {"name": "get_weather", "arguments": {"city": "Lisbon", "date": "2026-05-14"}} (48 steps)$'
expect '^block 4 committed$'
expect '^engine: {"name": "set_timer", "arguments": {"minutes": 3, "label": "tea"}}$'
expect '^error: INVALID_ARGUMENT - .*not a multiple of block_length 5$'
