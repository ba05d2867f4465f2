#!/usr/bin/env bash
# Makes the bundled model (models/toolcall-llada-3m) from nothing: the grammar's data, the character
# tokenizer and the five-stage copying curriculum (copying_curriculum.sh; about 4.5 hours on 2
# CPU cores with Debian's python3-torch and libopenblas0-pthread; the bf16 linear layers need a CPU
# with AVX-512 BF16 to be fast), then the files in Hugging Face layout and the two held-out splits.
# A stopped run resumes where it stopped when run again with the same WORK_DIR.
# Deterministic from the seeds in the scripts. usage: training/make_bundled_model.sh [WORK_DIR]
set -euo pipefail
cd "$(dirname "$0")"
work=${1:-../build/bundled}
# Stage 5 stops at step 2,000 of its 3,000-step schedule, a step chosen before scoring it.
stage5_steps=3000 stage5_stop=2000
bash copying_curriculum.sh "$work" "$stage5_steps" 250 260 "$stage5_stop"
cp "$work/stage5"/{config.json,model.safetensors,tokenizer.json,tokenizer_config.json,SHA256SUMS} ../models/toolcall-llada-3m/
cp "$work/grammar/test.jsonl" ../bench/data/tool_calls_heldout.jsonl
cp "$work/grammar/unseen.jsonl" ../bench/data/tool_calls_unseen.jsonl
echo "wrote models/toolcall-llada-3m and bench/data/tool_calls_{heldout,unseen}.jsonl"
