#!/bin/sh
# Runs the C example against the bundled model and checks what it prints: the plan, one JSON tool
# call per request (the right tool for each), and the engine's stats.
# usage: check_output.sh PATH_TO_unmask-example-c
set -eu
out=$("$1") || { echo "the example failed:"; echo "$out"; exit 1; }
echo "$out"
expect() {
    echo "$out" | grep -q -- "$1" || { echo "FAILED: the output lacks: $1"; exit 1; }
}
expect '^plan: weights [0-9]* bytes, 3 x [0-9]* bytes of sequence state, scratch [0-9]* bytes: fits$'
expect '^  answer: {"name": "get_weather", "arguments": {"city": "Lisbon", "date": "2026-05-14"}}$'
expect '^  answer: {"name": "set_timer", "arguments": {"minutes": 25, "label": "pasta"}}$'
expect '^  answer: {"name": "convert_currency", "arguments": {"amount": 120, "from": "USD", "to": "EUR"}}$'
expect '^engine: 3 submitted, 3 finished with EOS, '
