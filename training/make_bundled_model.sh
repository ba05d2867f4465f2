#!/usr/bin/env bash
# Makes the bundled model (models/toolcall-llada-3m) from nothing: the data, the tokenizer, about
# 55 minutes of training on 2 CPU cores (Debian's python3-torch; libopenblas0-pthread makes its
# matmuls about 25x faster than the reference BLAS; the first stage's bf16 linear layers need a
# CPU with AVX-512 BF16 to be fast), then the files in Hugging Face layout.
# Deterministic from the seeds below. usage: training/make_bundled_model.sh [WORK_DIR]
set -euo pipefail
cd "$(dirname "$0")"
work=${1:-../build/bundled}
python3 make_data.py "$work/data" --seed 1234 --train 100000 --test 600 --unseen 600
python3 train_tokenizer.py "$work/data" "$work/tokenizer.json" --vocab 1024
shape=(--d 256 --layers 4 --heads 4 --mlp 512 --lengths 64:0.85,128:0.1,288:0.05 --batch 64 --threads 2)
# Stage 1: from scratch, the linear layers in bf16; stage 2: a second, shorter cosine in fp32 from
# stage 1's weights.
/usr/bin/python3 train.py "$work/data" "$work/tokenizer.json" "$work/stage1" --seed 1234 --steps 2000 --lr 2e-3 \
    --precision bf16 "${shape[@]}"
/usr/bin/python3 train.py "$work/data" "$work/tokenizer.json" "$work/model" --seed 4321 --steps 800 --lr 1e-3 \
    --init "$work/stage1" "${shape[@]}"
cp "$work/model"/{config.json,model.safetensors,tokenizer.json,tokenizer_config.json,SHA256SUMS} ../models/toolcall-llada-3m/
cp "$work/data/test.jsonl" ../bench/data/tool_calls_heldout.jsonl
cp "$work/data/unseen.jsonl" ../bench/data/tool_calls_unseen.jsonl
echo "wrote models/toolcall-llada-3m and bench/data/tool_calls_{heldout,unseen}.jsonl"
