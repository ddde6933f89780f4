#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Reruns the whole peer benchmark (issues 8 and 17) and writes OUT/results.md,
# the tables of docs/benchmarks.md, one section per CPU configuration. About
# 12-15 minutes per configuration on the 2-core machine.
#   bench/peers/run_all.sh [OUT_DIR]         (default /tmp/zerodp-peers)
# Environment: ZERODP (binary; default build/zerodp, copied to OUT so a
# rebuild during the run cannot change it), REPS (runs per configuration,
# default 5), STEPS (optimizer steps per run, default 6; step 1 is warm-up and
# not timed), LOSS_STEPS (the longer loss-curve check, default 30; 0 skips
# it), PYTHON (default /usr/bin/python3: Debian's python3-torch), STAGES (the
# zerodp stages of the main rounds, default "0 1 2 3"), EXTRAS (0 skips the
# one-rank, scaling, loss-curve and collective sections; for a focused rerun
# such as STAGES="0 1" EXTRAS=0 REPS=5, about 6 minutes per configuration),
# PEERS (0 skips PyTorch's runs and the loss comparison: zerodp alone, on a
# machine without torch; numpy is still needed for the data), BACKENDS (the
# zerodp backends of the main rounds, default "thread mpi"; "thread" needs no
# OpenMPI), PRECISION (fp32, the default; bf16: zerodp --precision bf16
# --compute bf16 against PyTorch's CPU autocast to bf16 through oneDNN, both
# with bf16 matrix products and fp32 sums), CONFIGS (default "avx512 avx2" on
# a CPU with AVX-512, else "avx2"):
#   avx512  ZERODP_SIMD=avx512 OPENBLAS_CORETYPE=SkylakeX ATEN_CPU_CAPABILITY=avx512
#           (ZERODP_SIMD=avx512bf16 with PRECISION=bf16 on a CPU with AVX512_BF16)
#   avx2    ZERODP_SIMD=avx2 OPENBLAS_CORETYPE=Haswell ATEN_CPU_CAPABILITY=avx2
#           (an AVX2-only CPU such as Zen 3, emulated on an AVX-512 one: zerodp's
#           kernels, OpenBLAS's and PyTorch's all stop at AVX2)
#   native  nothing set: each program picks for itself
# The runs being compared are interleaved (one of each configuration per
# round), and the load average is logged before every run. OUT/results.md
# ends each configuration with the issue-17 targets, measured and met or not.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="${1:-/tmp/zerodp-peers}"
reps="${REPS:-5}"
steps="${STEPS:-6}"
loss_steps="${LOSS_STEPS:-30}"
stages="${STAGES:-0 1 2 3}"
extras="${EXTRAS:-1}"
py="${PYTHON:-/usr/bin/python3}"
peers="${PEERS:-1}"
backends="${BACKENDS:-thread mpi}"
precision="${PRECISION:-fp32}"
case "$precision" in
  fp32) zerodp_precision=(--precision fp32) autocast=none ;;
  bf16) zerodp_precision=(--precision bf16 --compute bf16) autocast=bf16 ;;
  *) echo "run_all: unknown PRECISION '$precision': use fp32 or bf16" >&2; exit 2 ;;
esac
src_bin="${ZERODP:-$root/build/zerodp}"
[[ -x "$src_bin" ]] || { echo "run_all: no zerodp binary at $src_bin: build it (ninja -C build zerodp) or set ZERODP" >&2; exit 2; }
"$py" -c "import numpy" 2>/dev/null || { echo "run_all: $py has no numpy: apt-get install python3-numpy, or set PYTHON" >&2; exit 2; }
if [[ "$peers" != 0 ]]; then
  "$py" -c "import torch" 2>/dev/null || { echo "run_all: $py has no torch: apt-get install python3-torch, set PYTHON, or set PEERS=0 for zerodp alone" >&2; exit 2; }
fi
for backend in $backends; do
  case "$backend" in thread) ;; mpi) command -v mpirun > /dev/null || { echo "run_all: no mpirun for BACKENDS=mpi: apt-get install openmpi-bin, or set BACKENDS=thread" >&2; exit 2; } ;;
    *) echo "run_all: unknown backend '$backend' in BACKENDS: use thread, mpi or both" >&2; exit 2 ;; esac
done
[[ -x /usr/bin/time ]] || { echo "run_all: no GNU time at /usr/bin/time (peak RSS per run): apt-get install time" >&2; exit 2; }
if [[ -z "${CONFIGS:-}" ]]; then
  if grep -qw avx512f /proc/cpuinfo; then CONFIGS="avx512 avx2"; else CONFIGS="avx2"; fi
fi
for config in $CONFIGS; do
  case "$config" in avx512|avx2|native) ;; *) echo "run_all: unknown configuration '$config' in CONFIGS: use avx512, avx2 or native" >&2; exit 2 ;; esac
done
mkdir -p "$out/runs"
cp "$src_bin" "$out/zerodp"
zerodp="$out/zerodp"
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
mpirun=(mpirun -np 2 --bind-to none)
if [[ "$(id -u)" == 0 ]]; then mpirun+=(--allow-run-as-root); fi
log="$out/runs/log.txt"
: > "$log"
start=$(date +%s)
note() { echo "[$(( $(date +%s) - start ))s] load $(cut -d' ' -f1-3 /proc/loadavg) | $*" | tee -a "$log"; }

{ echo "date: $(date -u)"; echo "precision: $precision"; echo "commit: $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"; echo "cores: $(nproc)"
  lscpu || true; free -m || true; } > "$out/runs/machine.txt"

# 1. Data and zerodp's initial weights (one step at lr 0 leaves them unchanged), in llm.c's format.
"$py" "$here/make_data.py" "$out/data"
data="$out/data/peers_train.bin"
base=(train --model gpt-bench --data "$data" "${zerodp_precision[@]}" --micro-batch 4 --seq-len 64 --schedule constant
      --clip 0 --weight-decay 0 --optimizer adamw --seed 1234 --eval-every 0 --sample-tokens 0)
common=("${base[@]}" --lr 3e-4)  # PyTorch's AdamW in torch_ddp.py: lr 3e-4, betas (0.9, 0.999), eps 1e-8, no decay
rm -rf "$out/init" "$out/initw"
"$zerodp" "${base[@]}" --ranks 2 --stage 0 --steps 1 --lr 0 --save "$out/init" > "$out/runs/init.log"
"$zerodp" ckpt consolidate "$out/init" "$out/initw" >> "$out/runs/init.log"
model_bin="$out/initw/model.bin"

torch_run() {  # mode steps tag
  note "torch $1 ($3)"
  timeout 300 "$py" "$here/torch_ddp.py" --mode "$1" --model-bin "$model_bin" --data "$data" --steps "$2" \
    --autocast "$autocast" --out "$runs/$3.json" > "$runs/$3.log" 2>&1 || note "FAILED: torch $1 ($3), see $runs/$3.log"
}
zerodp_run() {  # backend stage ranks steps tag
  note "zerodp $1 stage $2 N=$3 ($5)"
  local args=("${common[@]}" --stage "$2" --steps "$4" --metrics "$runs/$5.jsonl")
  rm -f "$runs/$5.rss"
  if [[ "$1" == thread ]]; then
    timeout 300 /usr/bin/time -a -o "$runs/$5.rss" -f "rss_kb=%M" "$zerodp" "${args[@]}" --ranks "$3" > "$runs/$5.log" 2>&1 ||
      note "FAILED: $5, see $runs/$5.log"
  else
    local mp=("${mpirun[@]}")
    mp[2]="$3"
    if (( $3 > 2 )); then mp+=(--oversubscribe); fi
    # GNU time appends one line per process to its own file (the ranks' outputs
    # interleave in the log).
    timeout 300 "${mp[@]}" /usr/bin/time -a -o "$runs/$5.rss" -f "rss_kb=%M" "$zerodp" "${args[@]}" --backend mpi \
      > "$runs/$5.log" 2>&1 ||
      note "FAILED: $5, see $runs/$5.log"
  fi
}

# One configuration's runs, into OUT/CONFIG/runs.
run_config() {
  local config=$1
  runs="$out/$config/runs"
  log="$runs/log.txt"
  mkdir -p "$runs"
  : > "$log"
  case "$config" in
    avx512) export ZERODP_SIMD=avx512 OPENBLAS_CORETYPE=SkylakeX ATEN_CPU_CAPABILITY=avx512
      # bf16 products run on the bf16 units where the CPU has them (oneDNN
      # uses them too); the plain avx512 level would compute them portably.
      if [[ "$precision" == bf16 ]] && grep -qw avx512_bf16 /proc/cpuinfo; then export ZERODP_SIMD=avx512bf16; fi ;;
    avx2) export ZERODP_SIMD=avx2 OPENBLAS_CORETYPE=Haswell ATEN_CPU_CAPABILITY=avx2 ;;
    native) unset ZERODP_SIMD OPENBLAS_CORETYPE ATEN_CPU_CAPABILITY ;;
  esac
  note "configuration $config: ZERODP_SIMD=${ZERODP_SIMD:-} OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-} ATEN_CPU_CAPABILITY=${ATEN_CPU_CAPABILITY:-}"

  # 2. Throughput, memory and loss: REPS rounds, each one run of every
  # configuration, and one rank alone (stage 1, the scaling target's base).
  for rep in $(seq 1 "$reps"); do
    for stage in $stages; do
      if (( stage == 0 )) && [[ "$peers" != 0 ]]; then torch_run ddp "$steps" "torch-ddp-r$rep"; fi
      if (( stage == 1 )) && [[ "$peers" != 0 ]]; then torch_run zero1 "$steps" "torch-zero1-r$rep"; fi
      for backend in $backends; do zerodp_run "$backend" "$stage" 2 "$steps" "zerodp-$backend-s$stage-r$rep"; done
    done
    if (( extras != 0 )); then zerodp_run thread 1 1 "$steps" "scale-n1-r$rep"; fi
  done
  if (( extras == 0 )); then return; fi

  # 3. Stage 3 at N=4 for 2 steps: memory only (oversubscribed below 4 cores).
  for backend in $backends; do zerodp_run "$backend" 3 4 2 "scale-n4-$backend"; done

  # 4. Loss curves side by side over more steps (the same batches on both sides).
  if (( loss_steps > 0 )) && [[ "$peers" != 0 ]]; then
    torch_run ddp "$loss_steps" "loss-torch-ddp"
    zerodp_run thread 0 2 "$loss_steps" "loss-zerodp-s0"
  fi

  # 5. One rank on one thread against the sgemm rate (CPU time), and the
  # collectives: zerodp's thread backend next to OpenMPI's own and memcpy.
  note "zerodp bench model"
  "$zerodp" bench model --steps 5 --json > "$runs/model.json" 2> "$runs/model.log" || note "FAILED: bench model, see $runs/model.log"
  note "zerodp bench comm"
  "$zerodp" bench comm --ranks 2 --max-bytes 64M --quick > "$runs/comm.txt" 2>&1 || echo "(bench comm failed)" >> "$runs/comm.txt"
}

for config in $CONFIGS; do run_config "$config"; done
note "done"
{
  for config in $CONFIGS; do
    echo "## Configuration $config"
    echo
    "$py" "$here/summarize.py" "$out/$config/runs"
    echo
  done
} > "$out/results.md"
echo "results: $out/results.md ($(( $(date +%s) - start )) s)"
