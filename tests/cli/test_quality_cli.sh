#!/usr/bin/env bash
# unmask-quality's command line: repeated --setting options run in order, --json writes them,
# progress goes to stderr, and a bad value exits 2 with one line on stderr.
# usage: test_quality_cli.sh PATH_TO_UNMASK_QUALITY
set -uo pipefail
quality=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAILED: $*"; failures=$((failures + 1)); }

"$quality" --limit 2 --gen-length 16 --threads 2 --setting policy=low_confidence,steps=8 \
    --setting policy=random,steps=4 --json "$work/q.json" >"$work/out" 2>"$work/err" ||
    fail "two settings: exit $? ($(cat "$work/err"))"
/usr/bin/python3 - "$work/q.json" <<'PY' || fail "--json holds both settings in order"
import json, sys
d = json.load(open(sys.argv[1]))
assert [r["setting"] for r in d["results"]] == ["policy=low_confidence,steps=8", "policy=random,steps=4"], d
assert d["examples"] == 2 and d["gen_length"] == 16
# Half the steps per block, about half the forwards (the bundled model's blocks of 16; a partial
# first block rounds its share of the steps up).
forwards = [r["forwards_per_sequence"] for r in d["results"]]
assert forwards[1] < forwards[0] <= 2 * forwards[1] and forwards[0] <= 16, forwards
PY
# Progress on stderr, not a terminal here: a line per tenth of the requests, per setting.
grep -q "^policy=low_confidence,steps=8: 100% 2 of 2" "$work/err" && grep -q "^policy=random,steps=4: 100% 2 of 2" "$work/err" ||
    fail "progress per setting on stderr: $(cat "$work/err")"

"$quality" --precision int9 >"$work/out" 2>"$work/err"
[ $? -eq 2 ] && [ "$(wc -l <"$work/err")" -eq 1 ] && grep -q -- "unknown --precision 'int9'" "$work/err" ||
    fail "--precision int9 exits 2 saying why in one line: $(cat "$work/err")"

"$quality" --batch 0 >"$work/out" 2>"$work/err"
[ $? -eq 2 ] || fail "--batch 0 exits 2"
[ "$(wc -l <"$work/err")" -eq 1 ] && grep -q -- "--batch must be at least 1" "$work/err" ||
    fail "--batch 0 says why in one line: $(cat "$work/err")"

[ "$failures" -eq 0 ] && echo "unmask-quality command line: all checks passed"
exit "$failures"
