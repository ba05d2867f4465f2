#!/usr/bin/env bash
# The copying curriculum for the grammar's data (training/README.md; bench/RESULTS.md, 2026-12-02
# to 2026-12-07 entries), block diffusion throughout: one-item copying drills from scratch, more
# one-item drills, one to three items, the grammar's written frames with 20% drills (the first
# 1,750 steps of a 6,000-step schedule: where the run was stopped when its unseen-template score
# had stood still for 750 steps), then the grammar with 60% of its frames composed from parts
# (composed_frames.py), each stage continuing from the one before. Writes
# WORK_DIR/stage{1,2,3,4,5}; stage 4 also every 250 steps and stage 5 every SAVE_EVERY (default
# 250), with the checkpoint a stopped run resumes from: run the same command again and it skips
# what is done (the data, the tokenizer, finished stages) and resumes from the last checkpoint, so
# a long run can span several sittings. VOCAB 260 is characters (256 bytes and 4 specials, no
# merges), which copy names of an unseen inventory far better than BPE pieces and take about
# twice the positions (bench/RESULTS.md, 2026-12-07, third session). STAGE5_STOP ends stage 5 at
# that step of its schedule (0: the whole schedule). The bundled model's recipe
# (make_bundled_model.sh).
# usage: training/copying_curriculum.sh WORK_DIR [STAGE5_STEPS [SAVE_EVERY [VOCAB [STAGE5_STOP]]]]
set -euo pipefail
cd "$(dirname "$0")"
work=$1 steps=${2:-3000} save_every=${3:-250} vocab=${4:-260} stop=${5:-0}
python=/usr/bin/python3
data() {  # NAME make_data.py-arguments...
    local name=$1; shift
    [ -f "$work/$name/train.jsonl" ] || $python make_data.py "$work/$name" "$@"
}
data grammar --seed 1234 --train 100000 --test 600 --unseen 600 --repeat-share 0.2
data composed --seed 1234 --train 100000 --test 600 --unseen 600 --repeat-share 0.2 --composed-share 0.6
data drills1 --seed 1235 --train 30000 --test 0 --unseen 0 --repeat-share 1 --repeat-items 1-1
data drills3 --seed 1236 --train 30000 --test 0 --unseen 0 --repeat-share 1 --repeat-items 1-3
[ -f "$work/tokenizer.json" ] || $python train_tokenizer.py "$work/grammar" "$work/tokenizer.json" --vocab "$vocab"
longest=192  # positions of the longest example: a grammar request and its answer in BPE pieces
if [ "$vocab" -le 260 ]; then longest=384; fi  # in characters
shape=(--d 256 --layers 4 --heads 8 --mlp 512 --batch 64 --threads 2 --precision bf16 --block 16
       --lengths "$longest:1")
stage() {  # NAME DATA STEPS LR [--init DIR] ...
    local name=$1 data=$2 count=$3 lr=$4; shift 4
    [ -f "$work/$name.done" ] && return
    local resume=()
    [ -f "$work/$name/checkpoint.pt" ] && resume=(--resume)
    $python train.py "$work/$data" "$work/tokenizer.json" "$work/$name" --steps "$count" --lr "$lr" "${shape[@]}" "$@" \
        "${resume[@]}" >> "$work/$name.log"
    tail -n 1 "$work/$name.log"
    touch "$work/$name.done"
}
stage stage1 drills1 300 2e-3
stage stage2 drills1 600 1e-3 --init "$work/stage1"
stage stage3 drills3 400 1e-3 --init "$work/stage2"
stage stage4 grammar 6000 1e-3 --init "$work/stage3" --stop-after 1750 --save-every 250
stage stage5 composed "$steps" 8e-4 --init "$work/stage4" --save-every "$save_every" --stop-after "$stop"
