#!/usr/bin/env bash
# The `unmask` command's contract: --help everywhere, --json output, and every error exits
# non-zero with exactly one line on stderr.
# usage: test_cli.sh PATH_TO_UNMASK FIXTURES_DIR
set -uo pipefail
unset UNMASK_MODEL  # the default model must be the bundled one
unmask=$1
fixtures=$2
failures=0
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

fail() { echo "FAILED: $*"; failures=$((failures + 1)); }

# expect_run NAME EXPECTED_EXIT ARGS... : runs unmask, checks the exit code, keeps stdout/stderr.
expect_run() {
    local name=$1 expected=$2
    shift 2
    "$unmask" "$@" >"$work/out" 2>"$work/err"
    local code=$?
    [ "$code" -eq "$expected" ] || fail "$name: exit $code, expected $expected (stderr: $(cat "$work/err"))"
}

# expect_one_error_line NAME PATTERN : stderr is one line matching PATTERN.
expect_one_error_line() {
    local lines
    lines=$(wc -l <"$work/err")
    [ "$lines" -eq 1 ] || fail "$1: stderr has $lines lines: $(cat "$work/err")"
    grep -q -- "$2" "$work/err" || fail "$1: stderr '$(cat "$work/err")' lacks '$2'"
}

expect_run "help" 0 --help
for command in version inspect generate chat plan tokenize detokenize serve-stdin; do
    grep -q "^  $command  " "$work/out" || fail "help lists $command, apart from its summary: $(cat "$work/out")"
done
for command in version inspect generate plan tokenize detokenize serve-stdin; do
    expect_run "$command --help" 0 "$command" --help
    grep -q "usage: unmask $command" "$work/out" || fail "$command --help shows its usage"
    grep -q -- "--json" "$work/out" || fail "$command --help lists --json"
done
expect_run "chat --help" 0 chat --help
grep -q "usage: unmask chat" "$work/out" || fail "chat --help shows its usage"

expect_run "version" 0 version
grep -q "^unmask 0\." "$work/out" || fail "version prints the release"
expect_run "version --json" 0 version --json
/usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["abi_major"]==d["header_abi_major"]; assert "cpu" in d["version"]' "$work/out" \
    || fail "version --json is JSON with matching ABI"

expect_run "no command" 2
expect_run "unknown command" 2 frobnicate
expect_one_error_line "unknown command" "unknown command 'frobnicate'"
expect_run "unknown option" 2 version --bogus
expect_one_error_line "unknown option" "unknown option '--bogus'"
# An option's value is the next argument as it stands, even one that looks like an option.
expect_run "a negative value" 1 generate --temperature -1 --prompt-ids 1,2
expect_one_error_line "a negative value" "temperature must be >= 0, got -1"
# Without a model named, the bundled model (models/) is used; $UNMASK_MODEL overrides it.
expect_run "inspect the bundled model" 0 inspect
grep -q "^architecture  *llada$" "$work/out" || fail "inspect without DIR shows the bundled model: $(cat "$work/out")"
[ ! -s "$work/err" ] || fail "no progress unless asked, when stderr is not a terminal: $(cat "$work/err")"
# --progress: the bytes verified and read, a line per tenth (stderr is not a terminal here).
expect_run "inspect --verify --progress" 0 inspect --verify --progress
grep -q "^loading .*toolcall-llada-3m: 100% 5.3 MiB of 5.3 MiB, .*/s" "$work/err" ||
    fail "inspect --verify --progress reports the bytes: $(cat "$work/err")"
UNMASK_MODEL="$work/elsewhere" "$unmask" inspect >"$work/out" 2>"$work/err"
[ $? -eq 1 ] || fail "UNMASK_MODEL names the default model (a missing one is exit 1)"
expect_one_error_line "inspect \$UNMASK_MODEL" "IO: .*elsewhere"

expect_run "inspect missing dir" 1 inspect "$work/does-not-exist"
expect_one_error_line "inspect missing dir" "IO: .*does-not-exist"
expect_run "inspect missing dir --json" 1 inspect --json "$work/does-not-exist"
expect_one_error_line "inspect missing dir --json" "does-not-exist"
[ ! -s "$work/out" ] || fail "a failed --json command prints nothing on stdout"

expect_run "inspect good model" 0 inspect "$fixtures/good/llada-moe"
grep -q "^architecture  *llada-moe" "$work/out" || fail "inspect shows the architecture"
grep -q "model.layers.1.mlp.experts.3.down_proj.weight" "$work/out" || fail "inspect lists every tensor"
grep -q "not checked" "$work/out" || fail "inspect says checksums were not checked"
expect_run "inspect --json --precision fp32" 0 inspect --json --precision fp32 "$fixtures/good/llada-moe"
/usr/bin/python3 - "$work/out" <<'PY' || fail "inspect --json describes the model consistently"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["architecture"] == "llada-moe" and d["precision"] == "fp32"
assert len(d["tensors"]) == 38
assert sum(t["bytes"] for t in d["tensors"]) == d["weight_bytes"] == sum(d["bytes_by_component"].values())
assert d["weight_bytes"] == 4 * d["parameters_total"]
assert d["parameters_active"] < d["parameters_total"]
assert all(t["dtype"] == "F32" and t["file_dtype"] == "BF16" for t in d["tensors"])
PY
expect_run "inspect --verify" 0 inspect --verify --json "$fixtures/good/llada-checksummed"
grep -q '"checksums":"verified"' "$work/out" || fail "inspect --verify reports verified checksums"
grep -Eq '"fingerprint":"sha256sums:[0-9a-f]{64}"' "$work/out" || fail "inspect --verify reports the manifest's fingerprint"
expect_run "inspect --verify without manifest" 1 inspect --verify "$fixtures/good/llada"
expect_one_error_line "inspect --verify without manifest" "MODEL_FORMAT: .*no SHA256SUMS"
expect_run "inspect --verify mismatch" 1 inspect --verify "$fixtures/bad/checksum-mismatch"
expect_one_error_line "inspect --verify mismatch" "checksum mismatch"
expect_run "inspect bad precision" 2 inspect --precision fp4 "$fixtures/good/llada"
expect_one_error_line "inspect bad precision" "precision must be"
# An fp8 checkpoint (128x128 scales): its matrices stay F8_E4M3, 132 bytes per 128 weights.
expect_run "inspect fp8 checkpoint" 0 inspect --json "$fixtures/../reference/llada-fp8-block"
/usr/bin/python3 - "$work/out" <<'PY' || fail "inspect shows an fp8 checkpoint's F8_E4M3 matrices"
import json, sys
d = json.load(open(sys.argv[1]))
fp8 = [t for t in d["tensors"] if t["file_dtype"] == "F8_E4M3"]
assert len(fp8) == 16 and all(t["dtype"] == "F8_E4M3" for t in fp8)
assert all(t["bytes"] * 128 == 132 * t["shape"][0] * t["shape"][1] for t in fp8)
PY
expect_run "plan --precision fp8 for the CUDA backend" 0 plan -m "$fixtures/../reference/llada-fp8-original" --precision fp8 \
  --backend cuda --device-memory 1GB --json
/usr/bin/python3 - "$work/out" <<'PY' || fail "plan --precision fp8 counts 132 bytes per 128 weights of the matrices"
import json, sys
d = json.load(open(sys.argv[1]))
# 14 matrices of 128 columns (294,912 weights) in fp8 blocks; the embedding, LM head and norms in F32.
assert d["per_device"]["weights"] == 294912 // 128 * 132 + (2 * 300 * 128 + 5 * 128) * 4, d["per_device"]
PY

model="$fixtures/../reference/llada"
expect_run "generate --json" 0 generate -m "$model" --prompt-ids 1,2,3 --gen-length 8 --steps 4 --seed 3 --json
/usr/bin/python3 - "$work/out" <<'PY' || fail "generate --json prints tokens, steps, forwards and finish_reason"
import json, sys
d = json.load(open(sys.argv[1]))
assert len(d["tokens"]) == 8 and d["steps"] == 4 and d["forwards"] == 4
assert d["finish_reason"] in ("length", "eos")
PY
cp "$work/out" "$work/first"
expect_run "generate is reproducible" 0 generate --model "$model" --prompt-ids 1,2,3 --gen-length 8 --steps 4 --seed 3 --json
cmp -s "$work/out" "$work/first" || fail "the same seed gives the same JSON"
expect_run "generate on 2 host devices" 0 generate -m "$model" --prompt-ids 1,2,3 --gen-length 8 --steps 4 --seed 3 \
    --json --devices 2
cmp -s "$work/out" "$work/first" || fail "--devices 2 gives the tokens of one device"
printf 'model:\n  weights_path: %s\nresources:\n  cpu_devices: 2\n' "$model" >"$work/devices.yaml"
expect_run "generate on the host devices of a service file" 0 generate --config "$work/devices.yaml" --prompt-ids 1,2,3 \
    --gen-length 8 --steps 4 --seed 3 --json
cmp -s "$work/out" "$work/first" || fail "resources.cpu_devices: 2 gives the tokens of one device"
printf 'model:\n  weights_path: %s\nresources:\n  cpu_devices: 3\n' "$model" >"$work/devices.yaml"
expect_run "generate on 3 host devices of a service file" 1 generate --config "$work/devices.yaml" --prompt-ids 1,2,3
expect_one_error_line "generate on 3 host devices of a service file" "UNSUPPORTED: .*3 devices"
printf 'model:\n  weights_path: %s\nresources:\n  gpu_devices: [0, 1]\n' "$model" >"$work/gpus.yaml"
expect_run "a service file's GPUs without --backend" 1 generate --config "$work/gpus.yaml" --prompt-ids 1,2,3
expect_one_error_line "a service file's GPUs without --backend" "UNSUPPORTED: "
expect_run "--backend cpu over a service file's GPUs" 0 generate --config "$work/gpus.yaml" --backend cpu \
    --prompt-ids 1,2,3 --gen-length 8 --steps 4 --seed 3 --json
cmp -s "$work/out" "$work/first" || fail "--backend cpu runs one host device in place of the file's GPUs"
expect_run "generate on devices that cannot share the heads" 1 generate -m "$model" --prompt-ids 1,2,3 --gen-length 8 \
    --devices 3
expect_one_error_line "generate on devices that cannot share the heads" "UNSUPPORTED: .*3 devices"
expect_run "generate --show-steps (not a terminal)" 0 generate -m "$model" --prompt-ids 1,2,3 --gen-length 8 --steps 4 --show-steps
[ "$(grep -c '^step ' "$work/out")" -eq 4 ] || fail "--show-steps prints one line per step when not a terminal"
grep -q "^step 1 (+2): .*_" "$work/out" || fail "--show-steps shows masks as _"
# A LLaDA2 model: blocks of 8 from position 0 (5 prompt positions, 16 answer positions: 24 decoded),
# and LLaDA2.1's token editing, which takes steps of edits beyond one per answer position.
llada2="$fixtures/../reference/llada2-moe"
expect_run "generate with token editing" 0 generate -m "$llada2" --prompt-ids 1,2,3,4,5 --gen-length 16 --steps 16 \
  --threshold 0.5 --edit-threshold 0.3 --json
/usr/bin/python3 - "$work/out" <<'PY' || fail "token editing answers 16 tokens in more than 16 steps"
import json, sys
d = json.load(open(sys.argv[1]))
assert len(d["tokens"]) == 16 and d["steps"] > 16, d
PY
expect_run "token editing without threshold decoding" 1 generate -m "$llada2" --prompt-ids 1,2,3 --gen-length 16 \
  --steps 16 --edit-threshold 0.3
expect_one_error_line "token editing without threshold decoding" "INVALID_ARGUMENT: .*works with threshold decoding"
expect_run "generate bad block length" 1 generate -m "$model" --prompt-ids 1,2 --gen-length 8 --block-length 3
expect_one_error_line "generate bad block length" "INVALID_ARGUMENT: .*not a multiple of block_length 3"
expect_run "generate bad number" 2 generate -m "$model" --prompt-ids 1,2 --steps many
expect_one_error_line "generate bad number" "--steps needs an integer"
expect_run "generate bad ids" 2 generate -m "$model" --prompt-ids 1,x
expect_one_error_line "generate bad ids" "comma-separated token ids"
expect_run "generate bad policy" 2 generate -m "$model" --prompt-ids 1 --policy greedy
expect_one_error_line "generate bad policy" "--policy must be"
expect_run "generate text prompt without tokenizer" 1 generate -m "$model" --prompt "hello"
expect_one_error_line "generate text prompt without tokenizer" "UNSUPPORTED: the model has no tokenizer"
chat="$fixtures/good/tiny-chat"
expect_run "generate --chat" 0 generate -m "$chat" --prompt "hello there" --chat --system "be brief" --gen-length 8 --steps 8 --json
/usr/bin/python3 - "$work/out" <<'PY' || fail "generate --chat --json has text"
import json, sys
d = json.load(open(sys.argv[1]))
assert isinstance(d["text"], str) and len(d["tokens"]) == 8
PY
expect_run "generate text" 0 generate -m "$chat" --prompt "the" --gen-length 4 --steps 4
expect_run "generate prompt twice" 2 generate -m "$chat" --prompt "a" --prompt-ids 1
expect_one_error_line "generate prompt twice" "either --prompt TEXT or --prompt-ids"
# What the server refuses, the command line refuses too, and nothing given is silently ignored.
expect_run "generate empty prompt" 2 generate -m "$chat" --prompt '' --gen-length 4 --steps 4
expect_one_error_line "generate empty prompt" "--prompt must not be empty"
expect_run "generate --raw --system" 2 generate -m "$chat" --prompt "hi" --raw --system "be brief" --gen-length 4 --steps 4
expect_one_error_line "generate --raw --system" "--raw sends the prompt as it is"
expect_run "generate --raw --chat" 2 generate -m "$chat" --prompt "hi" --raw --chat --gen-length 4 --steps 4
expect_run "generate --raw without --prompt" 2 generate -m "$chat" --prompt-ids 1 --raw --gen-length 4 --steps 4
expect_run "generate seed -1" 1 generate -m "$chat" --prompt "hi" --seed -1 --gen-length 4 --steps 4
expect_one_error_line "generate seed -1" "seed must be a whole number in 0..18446744073709551615"
expect_run "generate largest seed" 0 generate -m "$chat" --prompt "hi" --seed 18446744073709551615 --gen-length 4 --steps 4

printf 'the tether h\xc3\xa9llo\n\tok' >"$work/text"
"$unmask" tokenize --tokenizer "$chat" <"$work/text" >"$work/ids" 2>"$work/err" || fail "tokenize: $(cat "$work/err")"
grep -q '^\[116,257,256,' "$work/ids" || fail "tokenize merges 'he' and ' t': $(cat "$work/ids")"
"$unmask" detokenize --tokenizer "$chat/tokenizer.json" <"$work/ids" >"$work/back" 2>"$work/err" || fail "detokenize: $(cat "$work/err")"
cmp -s "$work/text" "$work/back" || fail "detokenize(tokenize(text)) == text"
echo '[1, -5]' | "$unmask" detokenize --tokenizer "$chat" >"$work/out" 2>"$work/err"
[ $? -eq 1 ] || fail "detokenize of a negative id fails"
expect_one_error_line "detokenize negative id" "INVALID_ARGUMENT: .*token id -5 is negative"
echo 'not json' | "$unmask" detokenize --tokenizer "$chat" >"$work/out" 2>"$work/err"
expect_one_error_line "detokenize bad input" "not a JSON array"
echo '[116, 100000]' | "$unmask" detokenize --tokenizer "$chat" >"$work/out" 2>"$work/err"
[ $? -eq 1 ] || fail "detokenize of an id the tokenizer lacks fails"
expect_one_error_line "detokenize unknown id" "token id 100000 is not in the tokenizer's vocabulary (ids 0..261)"
echo '[2147483648]' | "$unmask" detokenize --tokenizer "$chat" >"$work/out" 2>"$work/err"
expect_one_error_line "detokenize id beyond int32" "token id 2147483648 is not in the tokenizer's vocabulary"
echo '[18446744073709551615]' | "$unmask" detokenize --tokenizer "$chat" >"$work/out" 2>"$work/err"
expect_one_error_line "detokenize id beyond int64" "token id 18446744073709551615 is not in the tokenizer's vocabulary"
/usr/bin/python3 -c 'print("[" * 100000 + "]" * 100000)' | "$unmask" detokenize --tokenizer "$chat" >"$work/out" 2>"$work/err"
[ $? -eq 1 ] || fail "detokenize of arrays nested 100,000 deep fails cleanly"
expect_one_error_line "detokenize deep input" "not nested arrays"
expect_run "tokenize missing file" 1 tokenize --tokenizer "$work/none.json"
expect_one_error_line "tokenize missing file" "IO: .*does not exist"
# The model's chat template is applied by default (no --chat): the bundled model needs it to answer.
expect_run "generate with the bundled model" 0 generate --prompt "Set a timer for 25 minutes for the pasta." \
    --threads 2 --json
/usr/bin/python3 - "$work/out" <<'PY' || fail "the bundled model answers with a JSON tool call: $(cat "$work/out")"
import json, sys
call = json.loads(json.load(open(sys.argv[1]))["text"])
assert set(call) == {"name", "arguments"} and isinstance(call["arguments"], dict), call
PY
# --raw sends the text without the template: the same request is then not a tool call.
expect_run "generate --raw with the bundled model" 0 generate --raw --prompt "Set a timer for 25 minutes for the pasta." \
    --gen-length 48 --threads 2 --json
/usr/bin/python3 - "$work/out" <<'PY' || fail "--raw sends the prompt without the chat template: $(cat "$work/out")"
import json, sys
text = json.load(open(sys.argv[1]))["text"]
assert '"name": "set_timer"' not in text, text
PY
# `unmask chat`: turns from stdin, the history kept, /reset and unknown commands answered.
printf 'Set a timer for 25 minutes for the pasta.\n/reset\n\nWhat is the weather in Lisbon on May 14?\n/frobnicate\n/exit\nnever read\n' \
    | "$unmask" chat --threads 2 >"$work/out" 2>"$work/err" || fail "chat: $(cat "$work/err")"
/usr/bin/python3 - "$work/out" <<'PY' || fail "chat answers each turn and takes its commands: $(cat "$work/out")"
import json, sys
lines = open(sys.argv[1]).read().splitlines()
assert len(lines) == 4, lines
assert json.loads(lines[0])["name"] == "set_timer", lines[0]
assert lines[1] == "(conversation reset)", lines[1]
assert json.loads(lines[2])["name"] == "get_weather", lines[2]
assert lines[3].startswith("(unknown command /frobnicate"), lines[3]
PY
expect_run "chat with a model without a tokenizer" 1 chat -m "$model"
expect_one_error_line "chat with a model without a tokenizer" "the model has no tokenizer"
for precision in fp32 bf16; do
  expect_run "generate with a dual $precision cache" 0 generate --prompt "Set a timer for 25 minutes for the pasta." \
      --threshold 0.9 --cache-mode dual --cache-vicinity 2 --cache-precision $precision \
      --threads 2 --json
  /usr/bin/python3 - "$work/out" <<'PY' || fail "a dual-cache generation answers with a JSON tool call: $(cat "$work/out")"
import json, sys
call = json.loads(json.load(open(sys.argv[1]))["text"])
assert set(call) == {"name", "arguments"}, call
PY
done
expect_run "generate bad cache mode" 2 generate --prompt-ids 1 --cache-mode triple
expect_one_error_line "generate bad cache mode" "--cache-mode must be one of none, prefix, dual"
expect_run "generate bad cache precision" 2 generate --prompt-ids 1 --cache-mode dual --cache-precision fp16
expect_one_error_line "generate bad cache precision" "--cache-precision must be one of fp32, bf16"
expect_run "generate vicinity without cache" 1 generate --prompt-ids 1 --gen-length 8 --cache-vicinity 2
expect_one_error_line "generate vicinity without cache" "INVALID_ARGUMENT: .*need a cache_mode"
expect_run "plan the bundled model" 0 plan --max-seq-len 128
grep -q "^fits: " "$work/out" || fail "plan without -m plans the bundled model"
state() { /usr/bin/python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["per_device"]["sequence_state"])' "$work/out"; }
expect_run "plan without a cache" 0 plan --max-seq-len 128 --json
plain=$(state)
expect_run "plan an fp32 cache" 0 plan --max-seq-len 128 --kv-cache --json
fp32=$(state)
expect_run "plan a bf16 cache" 0 plan --max-seq-len 128 --kv-cache-precision bf16 --json
bf16=$(state)
[ $((fp32 - plain)) -eq $((2 * (bf16 - plain))) ] && [ "$bf16" -gt "$plain" ] \
    || fail "a bf16 cache plans half the fp32 cache's bytes: $plain, $fp32, $bf16"
expect_run "plan" 0 plan -m "$fixtures/good/llada-moe" --budget 64MiB --max-seq-len 256 --concurrency 4 --threads 2
grep -q "^  usable .*100.0%" "$work/out" || fail "plan shows the usable budget: $(cat "$work/out")"
grep -q "^    experts " "$work/out" || fail "plan lists the experts' bytes"
grep -q "^fits: " "$work/out" || fail "plan says it fits"
expect_run "plan --json" 0 plan --json -m "$fixtures/good/moe-35b-a3b" --precision bf16 --devices 2 \
    --device-memory 80GB --memory-fraction 0.85 --max-seq-len 4096 --concurrency 8 --backend cuda
/usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); p=d["per_device"]
assert d["fits"] and p["budget"] == 68000000000 and p["required"] == p["weights"] + p["dynamic"] + p["scratch"]
assert abs(d["weights_total"] - 2 * d["parameters_total"]) <= 0.01 * 2 * d["parameters_total"]' "$work/out" \
    || fail "plan --json of the 35B headers-only model: $(cat "$work/out")"
expect_run "plan over budget" 0 plan -m "$fixtures/good/llada" --budget 500KB --concurrency 4 --threads 2
grep -q "^does NOT fit" "$work/out" || fail "plan says what does not fit"
grep -q "^longest sequence at 4 concurrent: [0-9]* positions" "$work/out" || fail "plan suggests a length"
expect_run "plan zero budget" 2 plan -m "$fixtures/good/llada" --budget 0
expect_one_error_line "plan zero budget" "budget must be a positive size"
expect_run "plan size without a number" 2 plan -m "$fixtures/good/llada" --budget GB
expect_one_error_line "plan size without a number" "budget must be a size in bytes"
expect_run "plan fraction above 1" 1 plan -m "$fixtures/good/llada" --memory-fraction 1.5
expect_one_error_line "plan fraction above 1" "INVALID_ARGUMENT: .*memory_fraction must be in (0, 1\]"
expect_run "generate over budget" 1 generate -m "$fixtures/good/llada" --prompt-ids 1,2 --gen-length 200 --steps 2 --budget 600KB --threads 2
expect_one_error_line "generate over budget" "OUT_OF_BUDGET: .*the longest sequence that fits now has [0-9]* positions"
longest=$(sed 's/.*fits now has \([0-9]*\) positions.*/\1/' "$work/err")
expect_run "generate with CFG" 0 generate -m "$fixtures/good/llada" --prompt-ids 1,2 --gen-length 16 --steps 4 --cfg-scale 1.5 --threads 2
expect_run "generate at the suggested length" 0 generate -m "$fixtures/good/llada" --prompt-ids 1,2 \
    --gen-length $((longest - 2)) --steps 2 --budget 600KB --threads 2

# serve-stdin: one JSON result per request line, in completion order, errors per line.
chat="$fixtures/good/tiny-chat"
printf '%s\n' '{"id": "a", "prompt_ids": [1, 2, 3], "gen_length": 8, "steps": 4}' \
    'not json' \
    '{"id": 70, "prompt": "hello", "gen_length": 6, "policy": "maskgit_plus", "temperature": 0.5, "seed": 3}' \
    '{"id": "dual", "prompt_ids": [1, 2], "gen_length": 8, "block_length": 4, "cache_mode": "dual", "cache_refresh_steps": 2}' \
    '{"id": "bad", "prompt_ids": [1], "gen_lenght": 8}' \
    '{"id": "long", "prompt_ids": [1], "gen_length": 100000}' \
    "$(/usr/bin/python3 -c 'print("{\"id\": " + "[" * 100000 + "]" * 100000 + ", \"prompt_ids\": [1]}")')" \
    "$(/usr/bin/python3 -c 'print("{\"id\": \"deep\", \"prompt_ids\": " + "[" * 100000 + "]" * 100000 + "}")')" \
    '{"id": "last", "prompt_ids": [1, 2], "gen_length": 4, "steps": 4}' \
    | "$unmask" serve-stdin -m "$chat" --threads 2 >"$work/served" 2>"$work/err" || fail "serve-stdin: $(cat "$work/err")"
/usr/bin/python3 - "$work/served" <<'PY' || fail "serve-stdin results: $(cat "$work/served")"
import json, sys
results = [json.loads(line) for line in open(sys.argv[1])]
by_id = {str(r["id"]): r for r in results}
# Every line is answered, the lines nested 100,000 deep by their line numbers, and the valid lines
# around them are served.
assert len(results) == 9 and len(by_id) == 9, results
assert "line 7 nests deeper than 64 levels" in by_id["7"]["error"] and by_id["7"]["status"] == "INVALID_ARGUMENT"
assert "line 8 nests deeper than 64 levels" in by_id["8"]["error"]
assert by_id["last"]["finish_reason"] in ("length", "eos") and len(by_id["last"]["tokens"]) == 4
assert len(by_id["dual"]["tokens"]) == 8 and by_id["dual"]["steps"] == 8
assert by_id["a"]["finish_reason"] in ("length", "eos") and len(by_id["a"]["tokens"]) == 8 and "text" in by_id["a"]
assert by_id["a"]["steps"] == 4 and by_id["a"]["timings"]["end_to_end_seconds"] > 0
assert len(by_id["70"]["tokens"]) == 6
assert "not JSON" in by_id["2"]["error"]
assert "gen_lenght" in by_id["bad"]["error"] and by_id["bad"]["status"] == "INVALID_ARGUMENT"
assert by_id["long"]["status"] == "TOO_LONG"
PY

# --config: the model, its precision and the engine's limits from a service configuration file.
cat >"$work/service.yaml" <<YAML
service:
  max_concurrent_requests: 2
model:
  weights_path: $chat
  precision: fp32
resources:
  log_level: debug
YAML
expect_run "generate --config" 0 generate --config "$work/service.yaml" --prompt-ids 104,105 --gen-length 8 --steps 4 \
    --json --log-file "$work/unmask.log" --log-rotation-mb 0.00005
grep -q '"finish_reason"' "$work/out" || fail "generate --config prints a result"
grep -q "engine ready" "$work/unmask.log" "$work/unmask.log.1" 2>/dev/null || fail "--log-file receives the log"
[ -f "$work/unmask.log.1" ] || fail "--log-rotation-mb rotates the log file"
expect_run "inspect --config" 0 inspect --config "$work/service.yaml"
grep -q "^architecture  *dream" "$work/out" || fail "inspect --config inspects the file's model"
echo -n "the" | "$unmask" tokenize --config "$work/service.yaml" >"$work/out" 2>"$work/err" || fail "tokenize --config: $(cat "$work/err")"
grep -q '^\[116,257\]' "$work/out" || fail "tokenize --config uses the model's tokenizer: $(cat "$work/out")"
expect_run "plan --config" 0 plan --config "$work/service.yaml" --threads 2 --json
grep -q '"max_concurrent":2' "$work/out" || fail "plan --config takes the concurrency from the file: $(cat "$work/out")"
printf 'service:\n  max_concurent_requests: 2\nmodel:\n  weights_path: x\n' >"$work/bad.yaml"
expect_run "generate --config with a typo" 1 generate --config "$work/bad.yaml" --prompt-ids 1
expect_one_error_line "generate --config with a typo" "INVALID_ARGUMENT: .*'service.max_concurent_requests' is not a known key"

if [ "$failures" -eq 0 ]; then echo "cli: all checks passed"; fi
exit $((failures > 0))
