#!/bin/sh
# Runs an example and checks what it prints: every line of EXPECTED (a grep pattern each) must
# match a line of the output. Used by CTest for each example against the bundled model.
# usage: check_output.sh EXPECTED COMMAND [ARG...]
set -eu
expected=$1
shift
out=$("$@") || { echo "the example failed:"; echo "$out"; exit 1; }
echo "$out"
while IFS= read -r pattern; do
    [ -n "$pattern" ] || continue
    echo "$out" | grep -q -- "$pattern" || { echo "FAILED: the output lacks: $pattern"; exit 1; }
done < "$expected"
