#!/usr/bin/env bash
# Runs each libFuzzer target for a bounded time on a seed corpus made from the model fixtures
# (good and malformed safetensors files and config.json files), GGUF files, tokenizer files and text, chat
# templates, and request bodies and HTTP requests of unmask-server.
# usage: run_fuzzers.sh FUZZ_BUILD_DIR SECONDS_PER_TARGET
set -euo pipefail
build=$1
seconds=${2:-60}
source_dir=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

/usr/bin/python3 "$source_dir/tests/fixtures/make_model_fixtures.py" "$work/fixtures" >/dev/null
mkdir -p "$work/corpus/safetensors" "$work/corpus/config" "$work/corpus/tokenizer"
i=0
while IFS= read -r -d '' file; do
  i=$((i + 1))
  if [ "$(stat -c %s "$file")" -le 65536 ]; then cp "$file" "$work/corpus/safetensors/seed-$i"; fi
done < <(find "$work/fixtures" -name '*.safetensors' -print0)
while IFS= read -r -d '' file; do
  i=$((i + 1))
  cp "$file" "$work/corpus/config/seed-$i"
done < <(find "$work/fixtures" -name 'config.json' -print0)

# Starts a target in the background, its log and exit status in $work.
start() {
  local target=$1 corpus=$2
  echo "== $target: $(ls "$corpus" | wc -l) seeds, ${seconds}s"
  { rc=0
    "$build/tests/fuzz/$target" -max_total_time="$seconds" -max_len=65536 -rss_limit_mb=2048 \
        -timeout=10 -print_final_stats=1 "$corpus" >"$work/$target.log" 2>&1 || rc=$?
    echo "$rc" >"$work/$target.rc"; } &
}
# Waits for a started target and prints its figures; libFuzzer exits non-zero on a crash, leak or
# timeout: then it shows why and fails.
finish() {
  local target=$1
  wait
  echo "== $target"
  grep -E "^(#[0-9]+.*DONE|stat::number_of_executed_units)" "$work/$target.log" || true
  local rc
  rc=$(cat "$work/$target.rc")
  if [ "$rc" -ne 0 ]; then
    tail -n 60 "$work/$target.log"
    return "$rc"
  fi
}
# Tokenizer seeds: the fixture tokenizer.json files, text,
while IFS= read -r -d '' file; do
  i=$((i + 1))
  cp "$file" "$work/corpus/tokenizer/seed-$i"
done < <(find "$work/fixtures" -name 'tokenizer.json' -print0)
printf 'Hello, world! 123 <|x|> caf\xc3\xa9 \xe4\xbd\xa0\xe5\xa5\xbd \xff\xfe' > "$work/corpus/tokenizer/seed-text"
# and hand-written ones reaching the components the fixtures lack (decoders, post-processors,
# added-token options).
cp "$source_dir"/tests/fuzz/corpus/tokenizer/* "$work/corpus/tokenizer/"

# GGUF seeds: small files written from the specification (tests/fixtures/gguf_writer.py),
/usr/bin/python3 "$source_dir/tests/fixtures/gguf_writer.py" "$work/corpus/gguf"
# and a whole model's metadata (the spec and tokenizer paths), the smallest model fixture.
cp "$work/fixtures/gguf/llada-q8_0.gguf" "$work/corpus/gguf/"
# Chat templates: the published ones, the bundled model's, and the engine's own test snippets.
mkdir -p "$work/corpus/chat_template"
cp "$source_dir"/tests/template/templates/*.jinja "$work/corpus/chat_template/"
/usr/bin/python3 -c 'import json, sys; sys.stdout.write(json.load(open(sys.argv[1]))["chat_template"])' \
    "$source_dir/models/toolcall-llada-3m/tokenizer_config.json" > "$work/corpus/chat_template/bundled.jinja"
cp "$source_dir"/tests/fuzz/corpus/chat_template/* "$work/corpus/chat_template/"
# unmask-server's request bodies: the checked-in examples of each endpoint.
cp -r "$source_dir/tests/fuzz/corpus/openai_request" "$work/corpus/openai_request"
# unmask-server's HTTP front: requests as clients send them, well-formed and not.
cp -r "$source_dir/tests/fuzz/corpus/http_front" "$work/corpus/http_front"

# Every target for the same time, as many at once as there are build jobs (each is one process).
targets=(
  fuzz_safetensors:"$work/corpus/safetensors"
  fuzz_gguf:"$work/corpus/gguf"
  fuzz_model_config:"$work/corpus/config"
  fuzz_tokenizer:"$work/corpus/tokenizer"
  fuzz_chat_template:"$work/corpus/chat_template"
  fuzz_openai_request:"$work/corpus/openai_request"
  fuzz_http_front:"$work/corpus/http_front"
)
jobs=${UNMASK_JOBS:-2}
for ((first = 0; first < ${#targets[@]}; first += jobs)); do
  batch=("${targets[@]:first:jobs}")
  for entry in "${batch[@]}"; do start "${entry%%:*}" "${entry#*:}"; done
  for entry in "${batch[@]}"; do finish "${entry%%:*}"; done
done
echo "fuzzing passed"
