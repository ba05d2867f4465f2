#!/usr/bin/env bash
# Two builds of unmask on the same generation, alternately: A B A B ... under /usr/bin/time, then
# each build's median wall and CPU seconds and the median of the pairwise ratios B/A (how many
# times faster B is than A, pair by pair, so that the machine's drift during the call cancels).
# The model is make_hf_model.py's random LLaDA (vs_llamacpp.sh's), in exact mode: a 32-token
# prompt, 256 positions in 256 steps, 2 threads; BLOCK is the block length (256: one block, as
# against llama.cpp; 32: LLaDA's usual semi-autoregressive blocks). Both must print the same text.
#
# usage: bench/ab_generate.sh BUILD_A BUILD_B [PAIRS] [BLOCK]
#   BUILD_A, BUILD_B: build directories with examples/cli/unmask (the baseline first)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
a=$(cd "$1" && pwd)/examples/cli/unmask
b=$(cd "$2" && pwd)/examples/cli/unmask
pairs=${3:-8}
block=${4:-256}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
/usr/bin/python3 "$here/make_hf_model.py" "$work/HF" >/dev/null
text=0123456789012345678901234567890  # 31 characters: byte-level ids, after <|startoftext|> (4093)
ids=4093$(printf '%s' "$text" | od -An -tu1 -v | tr -s ' \n' ',' | sed 's/,$//')
for ((r = 0; r < pairs; ++r)); do
  for side in A B; do
    program=$a
    [ "$side" = B ] && program=$b
    /usr/bin/time -f "$side %e %U %S" -a -o "$work/times" "$program" generate --model "$work/HF" --prompt-ids "$ids" \
      --gen-length 256 --steps 256 --block-length "$block" --threads 2 >"$work/$side.out" 2>/dev/null
  done
done
cmp -s "$work/A.out" "$work/B.out" || echo "note: the two builds printed different text"
awk -v pairs="$pairs" -v block="$block" '
  function median(a, n,   i, j, x) { for (i = 1; i <= n; ++i) for (j = i + 1; j <= n; ++j) if (a[j] < a[i]) { x = a[i]; a[i] = a[j]; a[j] = x }
                                    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
  $1 == "A" { ++na; wa[na] = $2; ca[na] = $3 + $4 }
  $1 == "B" { ++nb; wb[nb] = $2; cb[nb] = $3 + $4; ratio[nb] = wa[nb] / $2 }
  END {
    printf "block %d, %d pairs: A wall %.2f s cpu %.2f s | B wall %.2f s cpu %.2f s | B/A speed-up (median of pairs) %.3fx\n",
           block, pairs, median(wa, na), median(ca, na), median(wb, nb), median(cb, nb), median(ratio, nb) }' "$work/times"
