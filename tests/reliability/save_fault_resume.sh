#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A fault in the middle of a checkpoint save (ZERODP_FAULT save=3,point=P):
# `exit` ends the whole process at once, as a crash would; `hang` stops one
# rank until the others time out; `throw` fails the save as a write error
# would (a full disk): the run stops (exit code 1), leaves no step-N.tmp,
# names the last complete checkpoint and prints the command that resumes
# it, which the test then runs as printed. Either way the run fails, `latest` still
# names a complete checkpoint (the one before, or the new one when the fault
# came after `latest` was written), `ckpt inspect` finds it intact, and
# resuming from it ends with final weights bitwise equal to an uninterrupted
# run's (consolidated safetensors compared with cmp).
# usage: save_fault_resume.sh ZERODP POINT exit|hang|throw
set -euo pipefail
zerodp=$1 point=$2 action=$3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
trap 'echo "FAILED (exit $?) at line $LINENO"; tail -n 15 "$dir"/*.log' ERR
case $point in
  begin | shard-partial | shard-written) rank=1 ;;  # every rank reaches these: fail a non-zero one
  *) rank=0 ;;                                       # rank 0's own steps
esac
common=(train --ranks 2 --stage 3 --precision bf16 --micro-batch 2 --seq-len 32 --eval-every 0 --sample-tokens 0
        --steps 24 --seed 11 --comm-timeout 3 --checkpoint-timeout 3)
"$zerodp" "${common[@]}" --save "$dir/straight" > "$dir/straight.log"

# Saves at steps 4, 8, 12, ...: the third (step 12) fails at $point.
start=$(date +%s)
rc=0
ZERODP_FAULT="rank=$rank,save=3,point=$point,action=$action" \
  timeout 120 "$zerodp" "${common[@]}" --save "$dir/faulty" --save-every 4 > "$dir/faulty.log" 2>&1 || rc=$?
elapsed=$(( $(date +%s) - start ))
[ "$rc" != 124 ] || { echo "the faulty run hung"; exit 1; }
[ "$rc" != 0 ] || { echo "the faulty run succeeded: the fault did not fire"; exit 1; }
if [ "$action" = throw ]; then
  [ "$rc" = 1 ] || { echo "expected exit code 1, got $rc"; cat "$dir/faulty.log"; exit 1; }
  grep -q "injected failure at save 3 ($point)" "$dir/faulty.log" ||
    { echo "the failure does not name its cause"; cat "$dir/faulty.log"; exit 1; }
  if ls -d "$dir"/faulty/*.tmp 2> /dev/null; then echo "a failed save left its partial directory"; exit 1; fi
elif [ "$action" = exit ]; then
  # The dying rank says where, then the process ends at once.
  grep -q "injected exit at save 3 ($point)" "$dir/faulty.log" && [ "$rc" = 86 ] ||
    { echo "expected the fault's message and exit code 86, got $rc"; cat "$dir/faulty.log"; exit 1; }
else
  # The first failure is the other rank's timeout, naming the hung one.
  grep -q "timed out after 3000 ms waiting for rank $rank" "$dir/faulty.log" ||
    { echo "the other rank did not time out naming rank $rank"; cat "$dir/faulty.log"; exit 1; }
fi

latest=$(cat "$dir/faulty/latest")
want=step-00000008
[ "$point" != latest-written ] || want=step-00000012
[ "$latest" = "$want" ] || { echo "latest names $latest, expected $want"; ls -la "$dir/faulty"; exit 1; }
"$zerodp" ckpt inspect "$dir/faulty" > "$dir/inspect.log"

if [ "$action" = throw ]; then
  # The message names the checkpoint `latest` names and the command; run it as printed.
  grep -q "The last complete checkpoint is $dir/faulty/$want; continue with: zerodp train --resume" \
    "$dir/faulty.log" || { echo "the failure does not name $want and the resume command"; cat "$dir/faulty.log"; exit 1; }
  command=$(sed -n 's/.*; continue with: zerodp \(.*\) (train\/.*/\1/p' "$dir/faulty.log")
  # shellcheck disable=SC2086 # the printed command's words
  "$zerodp" $command --eval-every 0 --sample-tokens 0 > "$dir/resumed.log"
else
  "$zerodp" "${common[@]}" --resume "$dir/faulty" --save "$dir/faulty" --save-every 4 > "$dir/resumed.log"
fi
"$zerodp" ckpt consolidate "$dir/straight" "$dir/out_straight" > /dev/null
"$zerodp" ckpt consolidate "$dir/faulty" "$dir/out_faulty" > /dev/null
cmp "$dir/out_straight/model.safetensors" "$dir/out_faulty/model.safetensors" ||
  { echo "final weights differ after the fault and resume"; exit 1; }
echo "save fault at $point ($action, rank $rank): run failed with exit code $rc after $elapsed s;" \
     "latest = $latest, intact; resumed to identical final weights"
