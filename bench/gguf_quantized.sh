#!/usr/bin/env bash
# Whole-process time and peak memory of `unmask generate` on one random LLaDA-shaped GGUF model
# (bench/make_gguf_model.py: d 512, 8 layers, mlp 1536, vocab 4096, ~31M parameters) stored as
# F32, BF16, Q8_0 and Q4_0, and the BF16 file quantized at load (TYPE@PRECISION: BF16@int8,
# BF16@q4, BF16@fp8), runs alternating between them, medians reported.
# usage: bench/gguf_quantized.sh BUILD_DIR [RUNS] [TYPES...]
set -euo pipefail
build=$1
runs=${2:-5}
types=(F32 BF16 Q8_0 Q4_0 BF16@int8 BF16@q4 BF16@fp8)
if [ $# -gt 2 ]; then types=("${@:3}"); fi
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for t in "${types[@]}"; do
  file=${t%@*}
  [ -f "$work/$file.gguf" ] || /usr/bin/python3 "$here/make_gguf_model.py" "$work/$file.gguf" "$file"
done
prompt=$(seq -s, 1 32)
for ((r = 0; r < runs; ++r)); do
  for t in "${types[@]}"; do
    precision=auto
    [[ $t == *@* ]] && precision=${t#*@}
    /usr/bin/time -f "$t %e %U %S %M" -a -o "$work/times" "$build/examples/cli/unmask" generate --model "$work/${t%@*}.gguf" \
        --precision "$precision" --prompt-ids "$prompt" --gen-length 64 --steps 64 --block-length 32 --threads 2 \
        >"$work/$t.out" 2>/dev/null
  done
done
# Greedy tokens: the first line of output holds the 64 generated ids.
reference=${types[0]}
echo "type       file_MiB  wall_s  cpu_s  max_rss_MiB  same_tokens_as_$reference   (medians of $runs; generate: prompt 32, gen 64, 64 steps, block 32, 2 threads)"
for t in "${types[@]}"; do
  size=$(( $(stat -c %s "$work/${t%@*}.gguf") / 1048576 ))
  same=$(paste -d' ' <(head -1 "$work/$reference.out" | tr ' ' '\n') <(head -1 "$work/$t.out" | tr ' ' '\n') | awk '$1 == $2' | wc -l)
  grep "^$t " "$work/times" | awk -v t="$t" -v size="$size" -v same="$same" '
    { wall[NR] = $2; cpu[NR] = $3 + $4; rss[NR] = $5 / 1024 }
    function median(a, n,   i, j, x) { for (i = 1; i <= n; ++i) for (j = i + 1; j <= n; ++j) if (a[j] < a[i]) { x = a[i]; a[i] = a[j]; a[j] = x }
                                      return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
    END { printf "%-10s %8d %7.2f %6.2f %12.0f  %d/64\n", t, size, median(wall, NR), median(cpu, NR), median(rss, NR), same }'
done
