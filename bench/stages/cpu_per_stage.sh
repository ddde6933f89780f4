#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Each ZeRO stage's CPU time per step at N ranks, and N ranks' tokens/s
# against the machine's own ceiling, measured so that a shared, noisy
# machine can answer (docs/benchmarks.md, "CPU time per stage"):
#   - CPU: the metrics file's cpu_seconds (each rank's compute and comm
#     threads, zero::Engine::cpu_seconds), summed over the ranks, median of
#     the steps after the first two, per run; the stages interleaved round
#     by round, the median over the rounds; each stage against the least.
#   - Ceiling: N one-rank runs at once (the same micro-batches per rank, no
#     communication) against the N-rank run, interleaved with it: the N-rank
#     run's tokens/s over the sum of the one-rank runs' tokens/s.
# usage: cpu_per_stage.sh ZERODP [ROUNDS] [extra train flags...]
# The default run: gpt-bench, fp32, micro-batch 4 x 64, 12 steps, 2 ranks.
set -euo pipefail
zerodp=$1
rounds=${2:-3}
shift $(($# < 2 ? $# : 2))
ranks=${RANKS:-2}
steps=${STEPS:-12}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
run=(train --model gpt-bench --precision fp32 --micro-batch 4 --seq-len 64 --steps "$steps" --eval-every 0
     --sample-tokens 0 --held-out 0 --log-every 1000 "$@")
for round in $(seq "$rounds"); do
  for stage in 0 1 2 3; do
    "$zerodp" "${run[@]}" --ranks "$ranks" --stage "$stage" --metrics "$dir/s$stage.$round.jsonl" > /dev/null
  done
  pids=()
  for r in $(seq "$ranks"); do
    "$zerodp" "${run[@]}" --ranks 1 --stage 1 --metrics "$dir/one$r.$round.jsonl" > /dev/null &
    pids+=($!)
  done
  wait "${pids[@]}"
done
python3 - "$dir" "$rounds" "$ranks" <<'PY'
import json, statistics, sys, glob
d, rounds, ranks = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def med(path, field):
    rows = [json.loads(l) for l in open(path)]
    rows = [r for r in rows if "step" in r and r["step"] > 2]
    return statistics.median(sum(r["cpu_seconds"]) if field == "cpu" else r[field] for r in rows)
cpu = {s: statistics.median(med(f"{d}/s{s}.{k}.jsonl", "cpu") for k in range(1, rounds + 1)) for s in range(4)}
least = min(cpu.values())
print(f"CPU seconds per step, {ranks} ranks summed (median of steps 3-, median of {rounds} rounds):")
for s in range(4):
    print(f"  stage {s}: {cpu[s]:.4f} s  ({100 * (cpu[s] / least - 1):+.1f}% over the least)")
ratios = []
for k in range(1, rounds + 1):
    together = sum(med(f"{d}/one{r}.{k}.jsonl", "tokens_per_s") for r in range(1, ranks + 1))
    ratios.append(med(f"{d}/s1.{k}.jsonl", "tokens_per_s") / together)
print(f"stage 1 at {ranks} ranks over {ranks} one-rank runs at once (tokens/s): "
      + ", ".join(f"{x:.3f}" for x in ratios) + f"; median {statistics.median(ratios):.3f}")
PY
