#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A disk that stops taking checkpoints mid-run, for real (no fault
# injection): --save on a tmpfs of its own (a private mount namespace), which
# after the first save is remounted read-only (readonly) or filled by another
# writer (full). Every 4th step saves.
#   --on-save-failure stop: the first save after it fails with the
#   filesystem's error (exit code 1), leaves no step-N.tmp, and names the
#   last complete checkpoint and the command that resumes it; `ckpt inspect`
#   finds that checkpoint intact; once the disk is writable again, the
#   printed command ends with final weights bitwise equal to an uninterrupted
#   run's.
#   --on-save-failure continue: the failed save is reported and the run
#   trains on; the disk made writable again, a later save succeeds and the
#   run ends (exit code 0) with the uninterrupted run's final weights.
# Needs root and mount namespaces: exits 77 (skipped) without them.
# usage: save_disk_faults.sh ZERODP readonly|full stop|continue
set -euo pipefail
zerodp=$1 mode=$2 policy=$3
if [ -z "${ZDP_IN_NAMESPACE:-}" ]; then
  if ! unshare --mount --propagation private true 2> /dev/null; then
    echo "SKIP: no mount namespace here (needs root, unshare --mount)"
    exit 77
  fi
  exec env ZDP_IN_NAMESPACE=1 unshare --mount --propagation private "$0" "$@"
fi
dir=$(mktemp -d)
trap 'umount "$dir/disk" 2> /dev/null || true; rm -rf "$dir"' EXIT
mkdir "$dir/disk"
# Room for a few checkpoints of this model (9.8 MiB each with its optimizer state).
mount -t tmpfs -o size=64m tmpfs "$dir/disk" 2> /dev/null || { echo "SKIP: cannot mount a tmpfs here"; exit 77; }

common=(train --ranks 2 --stage 3 --precision bf16 --micro-batch 2 --seq-len 32 --eval-every 0 --sample-tokens 0
        --held-out 0 --steps 300 --seed 11 --comm-timeout 30)
"$zerodp" "${common[@]}" --save "$dir/straight" > "$dir/straight.log"

wait_for() {  # wait_for PATTERN: until the run's log has it (or the run ended)
  for _ in $(seq 1 1200); do
    grep -q -- "$1" "$dir/run.log" 2> /dev/null && return 0
    kill -0 "$pid" 2> /dev/null || return 1
    sleep 0.05
  done
  return 1
}
# The disk stops taking writes. A remount fails (busy) while a save has a file open: try again.
break_disk() {
  if [ "$mode" = readonly ]; then
    for _ in $(seq 1 100); do mount -o remount,ro "$dir/disk" 2> /dev/null && return 0; sleep 0.01; done
    echo "could not remount read-only"; exit 1
  fi
  # Another writer takes all the room that is left.
  dd if=/dev/zero of="$dir/disk/filler" bs=1M 2> /dev/null || true
}
mend_disk() {
  if [ "$mode" = readonly ]; then mount -o remount,rw "$dir/disk"; else rm -f "$dir/disk/filler"; fi
}

"$zerodp" "${common[@]}" --save "$dir/disk/run" --save-every 4 --keep-last 2 --log-every 1 --on-save-failure "$policy" \
  > "$dir/run.log" 2>&1 &
pid=$!
wait_for "^saved $dir/disk/run/step-00000004" || { cat "$dir/run.log"; echo "no first save"; exit 1; }
break_disk
wait_for "saving step [0-9]* under $dir/disk/run failed" || { tail -5 "$dir/run.log"; echo "no save failed"; exit 1; }
if [ "$policy" = continue ]; then
  wait_for "Training on (--on-save-failure continue)" || { tail -5 "$dir/run.log"; echo "did not train on"; exit 1; }
  mend_disk
fi
set +e; wait "$pid"; code=$?; set -e
failed=$(sed -n 's/.*saving step \([0-9]*\) under .* failed.*/\1/p' "$dir/run.log" | head -1)
cause="Read-only file system"
[ "$mode" = full ] && cause="No space left on device"
grep -q "saving step $failed under $dir/disk/run failed (.*$cause" "$dir/run.log" \
  || { tail -5 "$dir/run.log"; echo "the failure does not name '$cause'"; exit 1; }
if ls -d "$dir"/disk/run/*.tmp 2> /dev/null; then echo "the failed save left its partial directory"; exit 1; fi

if [ "$policy" = stop ]; then
  [ "$code" = 1 ] || { tail -5 "$dir/run.log"; echo "exit code $code, expected 1"; exit 1; }
  latest=$(cat "$dir/disk/run/latest")
  grep -q "The last complete checkpoint is $dir/disk/run/$latest; continue with: zerodp train --resume" \
    "$dir/run.log" || { tail -3 "$dir/run.log"; echo "the failure does not name $latest and the command"; exit 1; }
  "$zerodp" ckpt inspect "$dir/disk/run" > /dev/null
  mend_disk
  command=$(sed -n 's/.*; continue with: zerodp \(.*\) (train\/.*/\1/p' "$dir/run.log")
  # shellcheck disable=SC2086 # the printed command's words
  "$zerodp" $command --eval-every 0 --sample-tokens 0 > "$dir/resumed.log"
else
  [ "$code" = 0 ] || { tail -5 "$dir/run.log"; echo "exit code $code, expected 0"; exit 1; }
  latest=$(cat "$dir/disk/run/latest")
  [ "$latest" = step-00000300 ] || { echo "latest names $latest after the run, expected step-00000300"; exit 1; }
fi
"$zerodp" ckpt consolidate "$dir/straight" "$dir/out_straight" > /dev/null
"$zerodp" ckpt consolidate "$dir/disk/run" "$dir/out_run" > /dev/null
cmp "$dir/out_straight/model.safetensors" "$dir/out_run/model.safetensors" \
  || { echo "final weights differ ($mode, $policy)"; exit 1; }
echo "disk $mode mid-run, --on-save-failure $policy: the save of step $failed failed naming '$cause'," \
     "nothing partial left, exit code $code; identical final weights"
