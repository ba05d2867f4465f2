#!/usr/bin/env bash
# On a machine with an NVIDIA GPU: builds unmask with CUDA, runs the CUDA backend's conformance
# suite against the CPU reference (every op, whole forwards of each architecture in fp32 and bf16,
# generations for each policy and cache mode at temperature 0), then the GPU entries of
# unmask-bench. Writes its logs and results to $OUT when set (else build-gpu/check). Needs no
# network: the Debian libraries come from tests/gpu/carry_deps.sh's .debs/gpu/root when the
# machine lacks them, the test models are written by the repository's scripts (python3 with
# PyTorch makes the reference models).
#
# With two GPUs or more it builds with NCCL, and the suite's NCCL case checks the collectives
# between them (the multi-GPU section); with one it says that section was skipped.
#
# The first three cases that fail run again under compute-sanitizer's memcheck straight away (the
# machine may be gone before a second call). With --sanitize it runs every case under
# compute-sanitizer instead (memcheck; racecheck and synccheck too for the cases of the kernels
# that share memory between threads), and no benchmarks: a second call on a warm machine (the
# build is kept). compute-sanitizer needs a machine that lets it read the device (not gVisor).
# It keeps to the device tool's 600 s a call: one build of the suite and the benchmarks, the cases
# (each stopped at 120 s), then only the benchmarks of the target figures, not started past 420 s
# and stopped at 570 s; every result is written to $OUT as it comes, so a stopped run returns them.
# usage: tests/gpu/check.sh [--sanitize]   (device tool: carry .debs/gpu/root, timeout_s 600)
set -euo pipefail
cd "$(dirname "$0")/../.."
mode=${1:-}
case "$mode" in
  ""|--sanitize) ;;
  *) echo "usage: tests/gpu/check.sh [--sanitize]" >&2; exit 2 ;;
esac
out=${OUT:-build-gpu/check}  # summary.txt, build.log, conformance.txt, sanitizer.txt, bench.txt and .json
mkdir -p "$out"
rm -f "$out/summary.txt" "$out/conformance.txt" "$out/sanitizer.txt"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
jobs=$(nproc)
started=$SECONDS
# The device tool allows 600 s a call: past bench_deadline the benchmarks are not started, and
# they are stopped at run_deadline, so that what was measured still comes back.
bench_deadline=${UNMASK_GPU_BENCH_DEADLINE:-420} run_deadline=${UNMASK_GPU_RUN_DEADLINE:-570}
log() { echo "=== $* ($((SECONDS - started)) s)" | tee -a "$out/summary.txt"; }

root=$PWD/.debs/gpu/root
if [ -d "$root" ]; then
  export PATH=$root/usr/bin:$PATH
  export PKG_CONFIG_PATH=$root/usr/lib/x86_64-linux-gnu/pkgconfig:$root/usr/share/pkgconfig
  export PKG_CONFIG_SYSROOT_DIR=$root PKG_CONFIG_LIBDIR=$PKG_CONFIG_PATH
  export CMAKE_PREFIX_PATH=$root/usr
  export LD_LIBRARY_PATH=$root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
# First, where the CUDA libraries the build links are (a missing one is the likeliest reason a
# fresh machine fails to configure): the toolkit's folders, then the loader's cache.
cuda_home=$(dirname "$(dirname "$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)")")
find_library() {  # name: the first file of lib<name>.so* in the toolkit or the loader's cache
  local found
  found=$(ls "$cuda_home"/lib64/lib"$1".so* "$cuda_home"/targets/*/lib/lib"$1".so* 2> /dev/null | head -1)
  [ -n "$found" ] || found=$(ldconfig -p 2> /dev/null | awk -v lib="lib$1.so" '$1 ~ "^" lib { print $NF; exit }')
  echo "${found:-MISSING}"
}
echo "CUDA libraries: cudart $(find_library cudart), cublasLt $(find_library cublasLt), nccl $(find_library nccl)" |
  tee -a "$out/summary.txt"
gpu_seen=false
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee -a "$out/summary.txt" && gpu_seen=true
# The multi-GPU section (the NCCL collectives) runs with two GPUs or more, and builds with NCCL then.
gpus=$(nvidia-smi -L 2> /dev/null | grep -c '^GPU' || true)
nccl=OFF
if [ "${gpus:-0}" -gt 1 ]; then nccl=ON; fi
{ cmake --version | head -1; g++ --version | head -1; nvcc --version | tail -2; } 2>&1 | tee -a "$out/summary.txt" || true
# The benchmarks write ~21 GB of random models to $TMPDIR: in memory when there is room, since a
# virtual machine's disk may be slow.
if [ "$(df -k --output=avail /dev/shm 2>/dev/null | tail -1)" -gt 30000000 ] 2>/dev/null; then export TMPDIR=/dev/shm; fi

# The suite is built and run before the benchmarks are built, so that a failure there (or the
# time running out) still leaves the conformance results; a hung case or benchmark is stopped.
# A build goes on past a failing file, so that one run shows every file that fails.
generator=() keep_going=(-k)
if [ ! -f build-gpu/CMakeCache.txt ] && command -v ninja > /dev/null; then generator=(-G Ninja); fi
if [ -f build-gpu/build.ninja ] || [ ${#generator[@]} -gt 0 ]; then keep_going=(-k 0); fi
build() {  # targets...
  cmake --build build-gpu -j "$jobs" --target "$@" -- "${keep_going[@]}" >> "$out/build.log" 2>&1 && return 0
  grep -E -B2 -A6 "error|Error" "$out/build.log" | head -80
  return 1
}
# One build of the suite and the benchmarks (they share the library's objects).
log "configure and build the suite and the benchmarks (CUDA for sm_90)"
cmake -S . -B build-gpu "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DUNMASK_CUDA=ON -DUNMASK_NCCL=$nccl \
      -DCMAKE_CUDA_ARCHITECTURES=90 -DUNMASK_BUILD_EXAMPLES=OFF > "$out/build.log" 2>&1 ||
  { tail -50 "$out/build.log"; exit 1; }
# A failed build fails the run even where older binaries are left (a warm machine's): with a
# suite, its cases still run, to show what else is wrong.
bench_built=true build_failed=false
if ! build unmask_cuda_tests unmask-bench; then
  build_failed=true
  echo "the build FAILED (see build.log)" | tee -a "$out/summary.txt"
  [ -x build-gpu/tests/unmask_cuda_tests ] || exit 1
  [ -x build-gpu/bench/unmask-bench ] || bench_built=false
fi
status=0
! $build_failed || status=1
log "test models"
data=$PWD/build-gpu/test-data
python=python3  # the first that has PyTorch (a machine's python3 may be a pyenv or venv without it)
for candidate in python3 /usr/bin/python3; do
  if "$candidate" -c "import torch" > /dev/null 2>&1; then python=$candidate; break; fi
done
if [ "$mode" != --sanitize ] || [ ! -d "$data/reference" ]; then  # a warm machine keeps the first call's
  # A failure here fails only the cases that read these models: the others still run.
  { "$python" tests/fixtures/make_model_fixtures.py "$data/fixtures" &&
    "$python" tests/reference/make_reference_fixtures.py "$data/reference"; } > "$scratch/data.log" 2>&1 ||
    { status=1; echo "test models FAILED:" | tee -a "$out/summary.txt"; tail -20 "$scratch/data.log"; }
  cat "$scratch/data.log" >> "$out/build.log"
fi

# Each case in a process of its own: a device fault (sticky for the process's CUDA context) in one
# case cannot fail the cases after it, so one run tells every kernel's state.
suite=build-gpu/tests/unmask_cuda_tests
export UNMASK_TEST_DATA=$data
case_name() {  # the name doctest lists between its two rules
  timeout 60 $suite --list-test-cases --first="$1" --last="$1" --no-colors=true |
    awk '/^====/ { n++; next } n == 1 { print; exit }'
}
count() {  # test cases passing doctest's filters ($@)
  timeout 60 $suite --count --no-colors=true "$@" | sed -n 's/.*passing the current filters: *\([0-9]*\).*/\1/p'
}
cases=$(count || true)
[ "${cases:-0}" -gt 0 ] || { echo "no test cases found" | tee -a "$out/summary.txt"; status=1; }
# Without a device the suite keeps only its host cases: with nvidia-smi seeing one, that is a fault.
if $gpu_seen && [ "${cases:-0}" -le "$(count --test-case='host:*' || echo 0)" ]; then
  status=1
  echo "nvidia-smi sees a GPU but CUDA does not: only the host cases run" | tee -a "$out/summary.txt"
fi

sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
sanitize() {  # case, tool, seconds: the case under compute-sanitizer's tool (false unless all is well)
  local code=0 verdict
  timeout "$3" "$sanitizer" --tool "$2" --error-exitcode 99 --print-limit 20 \
    $suite --first="$1" --last="$1" --no-colors=true --abort-after=20 >> "$out/sanitizer.txt" 2>&1 || code=$?
  case $code in
    0) verdict="passed" ;;
    99) verdict="REPORTED ERRORS" ;;
    124) verdict="timed out" ;;
    126|127) verdict="could not be started ($sanitizer)" ;;
    *) verdict="reported nothing, but the case failed its checks" ;;
  esac
  echo "$2: case $1 $verdict: $(case_name "$1")" | tee -a "$out/summary.txt"
  [ $code = 0 ]
}

if [ "$mode" = --sanitize ]; then
  log "every case under compute-sanitizer"
  for i in $(seq 1 "${cases:-0}"); do
    tools=memcheck
    case "$(case_name "$i")" in
      host:*|*"loses the device"*) continue ;;  # a planted fault, which memcheck would report
      *attention*|*grouped*|*routing*|*candidates*) tools="memcheck racecheck synccheck" ;;
    esac
    for tool in $tools; do sanitize "$i" "$tool" 120 || status=1; done
  done
  log "done: $([ $status = 0 ] && echo passed || echo FAILED)"
  exit $status
fi

log "conformance against the CPU backend"
# A case stops after 20 failed checks (a wrong kernel checked element by element would otherwise
# write megabytes); after two cases in a row time out, the rest are not tried.
failed=0 timeouts=0 failing=()
for i in $(seq 1 "${cases:-0}"); do
  left=$((run_deadline - (SECONDS - started)))
  if [ $timeouts -ge 2 ] || [ $left -lt 20 ]; then
    echo "test case $i of $cases not run: $([ $timeouts -ge 2 ] && echo 'two cases in a row timed out' ||
      echo "the call's time is nearly gone")" | tee -a "$out/summary.txt"
    failed=$((failed + 1))
    continue
  fi
  code=0
  timeout $((left < 120 ? left : 120)) $suite --first="$i" --last="$i" --duration=true --no-colors=true --abort-after=20 \
    > "$scratch/case.txt" 2>&1 || code=$?
  if [ $code = 124 ]; then timeouts=$((timeouts + 1)); else timeouts=0; fi
  if [ $code != 0 ]; then
    status=1
    failed=$((failed + 1))
    [ $code = 124 ] || failing+=("$i")
    echo "test case $i of $cases FAILED$([ $code = 124 ] && echo ' (timed out)'): $(case_name "$i")" |
      tee -a "$out/summary.txt"
  fi
  cat "$scratch/case.txt" >> "$out/conformance.txt"
done
echo "$((${cases:-0} - failed)) of ${cases:-0} test cases passed" | tee -a "$out/summary.txt"
# The multi-GPU section: the suite's NCCL case (every collective against its definition, then an
# abort) ran above; it checks something only with two GPUs or more.
if [ "${gpus:-0}" -gt 1 ]; then
  echo "multi-GPU: $gpus GPUs, NCCL $(find_library nccl): the NCCL collectives case ran in the suite above" |
    tee -a "$out/summary.txt"
else
  echo "multi-GPU section skipped: ${gpus:-0} GPU (the NCCL collectives need two or more)" | tee -a "$out/summary.txt"
fi

# The first three failing cases under memcheck at once: the machine may be gone before a second
# call (--sanitize) could come.
if [ ${#failing[@]} -gt 0 ]; then
  log "the first failing cases under compute-sanitizer memcheck"
  for i in "${failing[@]:0:3}"; do
    [ $((run_deadline - (SECONDS - started))) -gt 100 ] || { echo "no time left for memcheck" | tee -a "$out/summary.txt"; break; }
    sanitize "$i" memcheck 90 || true
  done
fi

# The target figures only (bench/RESULTS.md says which): the 8B forward, greedy candidates, the
# dual-cache step with and without graphs, and the engine at concurrency 1, 8 and 32.
targets='BM_cuda_forward/tokens:512/layers:32/|BM_cuda_candidates/rows:(32|512)/sampled:0/top_p:0/'
targets+='|BM_cuda_generation_step/layers:32/canvas:512/block:32/graphs:[01]/moe:0/kv_bf16:0/|BM_cuda_engine/'
if ! $bench_built; then
  status=1
  echo "unmask-bench did not build" | tee -a "$out/summary.txt"
elif [ $((SECONDS - started)) -gt "$bench_deadline" ]; then
  echo "benchmarks not run: $((SECONDS - started)) s gone, past the ${bench_deadline} s guard" | tee -a "$out/summary.txt"
else
  log "the benchmarks of the target figures"
  # bench.txt is written as each benchmark ends; bench.json only when all have.
  bench_seconds=$((run_deadline - (SECONDS - started)))
  [ $bench_seconds -gt 10 ] || bench_seconds=10
  timeout $bench_seconds build-gpu/bench/unmask-bench --benchmark_filter="$targets" \
    --benchmark_min_time=0.2 --benchmark_out="$out/bench.json" --benchmark_out_format=json 2>&1 |
    tee "$out/bench.txt" || { status=1; echo "the benchmarks were stopped or failed" | tee -a "$out/summary.txt"; }
  if grep -q "ERROR OCCURRED" "$out/bench.txt"; then  # a benchmark that skipped itself with an error
    status=1
    echo "benchmarks with errors: $(grep -c "ERROR OCCURRED" "$out/bench.txt")" | tee -a "$out/summary.txt"
  fi
fi

log "done: $([ $status = 0 ] && echo passed || echo FAILED)"
exit $status
