#!/usr/bin/env bash
# unmask against llama.cpp's llama-diffusion-cli on the same weights: make_hf_model.py's random
# LLaDA (d 512, 8 layers, mlp 1536, vocab 4096, 31.5M parameters) as a Hugging Face directory,
# converted by llama.cpp's own converter (tests/fixtures/llamacpp/convert_with_llamacpp.py) to F16
# and BF16 GGUF files and quantized by its llama-quantize to Q8_0 and Q4_K_M. Both programs run
# every file (unmask also the directory) in exact mode, no cache: a 32-token prompt (<|startoftext|>
# and 31 characters), 256 positions generated in 256 steps, each step one forward over all 288
# positions, greedy, 2 threads. llama.cpp's block schedule counts its blocks from the canvas's
# start and wants steps divisible by them, so it runs its timestep schedule (--diffusion-eps) and
# unmask one block of 256: the same 256 full forwards. Runs alternate, medians reported, and the
# speed-ups as the median of each round's ratio of neighbouring runs (unmask's file beside llama.cpp's).
#
# usage: bench/vs_llamacpp.sh LLAMACPP_SOURCE LLAMACPP_BUILD UNMASK_BUILD [RUNS]
#   LLAMACPP_SOURCE: unslothai/llama.cpp at d32676d77426540327835040d5d3279728f0b4c8 (2026-08-18)
#   LLAMACPP_BUILD: its build with -DGGML_NATIVE=ON, targets llama-diffusion-cli and llama-quantize
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source=$(cd "$1" && pwd)
llama=$(cd "$2" && pwd)/bin
unmask=$(cd "$3" && pwd)/examples/cli/unmask
runs=${4:-3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
/usr/bin/python3 "$here/make_hf_model.py" "$work/HF"
for type in f16 bf16; do
  /usr/bin/python3 "$here/../tests/fixtures/llamacpp/convert_with_llamacpp.py" "$source" "$work/HF" \
    "$work/${type^^}.gguf" "$type" >/dev/null 2>&1
done
for type in Q8_0 Q4_K_M; do "$llama/llama-quantize" "$work/F16.gguf" "$work/$type.gguf" "$type" 2 >/dev/null 2>&1; done
text=0123456789012345678901234567890a  # 31 characters: byte-level ids, after <|startoftext|> (4093)
text=${text:0:31}
ids=4093$(printf '%s' "$text" | od -An -tu1 -v | tr -s ' \n' ',' | sed 's/,$//')
configs=(llama.cpp:F16 llama.cpp:BF16 llama.cpp:Q8_0 llama.cpp:Q4_K_M unmask:HF unmask:F16 unmask:BF16 unmask:Q8_0
         unmask:Q4_K_M)
# The run order puts each unmask file next to its llama.cpp counterpart, for the pairwise ratios.
order=(llama.cpp:F16 llama.cpp:BF16 unmask:BF16 unmask:HF unmask:F16 llama.cpp:Q8_0 unmask:Q8_0 llama.cpp:Q4_K_M
       unmask:Q4_K_M)
for ((r = 0; r < runs; ++r)); do
  for c in "${order[@]}"; do
    program=${c%%:*} type=${c#*:}
    if [ "$program" = llama.cpp ]; then
      /usr/bin/time -f "$c %e %U %S %M" -a -o "$work/times" "$llama/llama-diffusion-cli" -m "$work/$type.gguf" \
        -p "$text" -ub 288 -c 288 -b 288 --diffusion-eps 0.001 --diffusion-steps 256 --temp 0 -t 2 \
        >"$work/$type.llama.out" 2>&1
    else
      model=$work/$type.gguf
      [ "$type" = HF ] && model=$work/HF
      /usr/bin/time -f "$c %e %U %S %M" -a -o "$work/times" "$unmask" generate --model "$model" --prompt-ids "$ids" \
        --gen-length 256 --steps 256 --block-length 256 --threads 2 >"$work/$type.unmask.out" 2>/dev/null
    fi
  done
done
echo "program:type     wall_s  cpu_s  max_rss_MiB  tokens_per_s   (medians of $runs; 256 forwards of 288 positions, 2 threads)"
for c in "${configs[@]}"; do
  grep "^$c " "$work/times" | awk -v c="$c" '
    { wall[NR] = $2; cpu[NR] = $3 + $4; rss[NR] = $5 / 1024 }
    function median(a, n,   i, j, x) { for (i = 1; i <= n; ++i) for (j = i + 1; j <= n; ++j) if (a[j] < a[i]) { x = a[i]; a[i] = a[j]; a[j] = x }
                                      return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
    END { w = median(wall, NR); printf "%-16s %6.2f %6.2f %12.0f %13.1f\n", c, w, median(cpu, NR), median(rss, NR), 256 / w }'
done
# Each round's ratios of neighbouring runs (the machine's drift between rounds cancels), then
# their median: llama.cpp's faster 16-bit file against unmask's BF16 file, and each quantized type.
awk -v runs="$runs" '
  function median(a, n,   i, j, x) { for (i = 1; i <= n; ++i) for (j = i + 1; j <= n; ++j) if (a[j] < a[i]) { x = a[i]; a[i] = a[j]; a[j] = x }
                                    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
  function report(name, a,   i, lo, hi) { lo = hi = a[1]; for (i = 2; i <= runs; ++i) { lo = a[i] < lo ? a[i] : lo; hi = a[i] > hi ? a[i] : hi }
                                          printf "%-38s %5.2fx  (rounds %.2fx..%.2fx)\n", name, median(a, runs), lo, hi }
  { wall[$1, ++seen[$1]] = $2 }
  END {
    for (r = 1; r <= runs; ++r) {
      f16 = wall["llama.cpp:F16", r]; bf16 = wall["llama.cpp:BF16", r]
      sixteen[r] = (f16 < bf16 ? f16 : bf16) / wall["unmask:BF16", r]
      q8[r] = wall["llama.cpp:Q8_0", r] / wall["unmask:Q8_0", r]
      q4[r] = wall["llama.cpp:Q4_K_M", r] / wall["unmask:Q4_K_M", r]
    }
    print "unmask speed-up, the median of the rounds (llama.cpp wall / unmask wall, same round):"
    report("16-bit (llama.cpp best of F16, BF16)", sixteen); report("Q8_0", q8); report("Q4_K_M", q4) }' "$work/times"
