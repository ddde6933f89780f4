#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A Llama-family model through Hugging Face's layout and back: llama-tiny
# trained 40 steps and saved; `ckpt consolidate` writes OUT/hf/ (config.json,
# model.safetensors); `train --init-from OUT/hf` without --model trains the
# checkpoint's shape from its weights: its first loss is the trained
# model's (at least 1 below a fresh model's, which starts near ln 256).
# The same in BF16 shards with an index reads back within bf16's rounding.
# --model gpt-tiny with that checkpoint is refused with exit 2.
# usage: train_llama_hf_roundtrip.sh ZERODP
set -euo pipefail
zerodp=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
trap 'echo "FAILED (exit $?) at line $LINENO"; tail -n 15 "$dir"/*.log' ERR
common=(train --seq-len 32 --micro-batch 4 --eval-every 0 --sample-tokens 0 --ranks 2)
"$zerodp" "${common[@]}" --model llama-tiny --steps 40 --save "$dir/ckpt" > "$dir/trained.log"
"$zerodp" ckpt consolidate "$dir/ckpt" "$dir/out" > "$dir/consolidate.log"
"$zerodp" "${common[@]}" --init-from "$dir/out/hf" --steps 2 > "$dir/init.log"
"$zerodp" "${common[@]}" --model llama-tiny --steps 2 > "$dir/fresh.log"
grep -q 'initialised from .*(Hugging Face LlamaForCausalLM, F32, 1 safetensors file)' "$dir/init.log" \
  || { echo "the run did not say what it read"; exit 1; }
grep -q 'the config.json of --init-from' "$dir/init.log" || { echo "the model was not taken from config.json"; exit 1; }
first() { grep -o 'step 1/2 | loss [0-9.]*' "$1" | grep -o '[0-9.]*$'; }
init=$(first "$dir/init.log") fresh=$(first "$dir/fresh.log")
awk -v a="$init" -v b="$fresh" 'BEGIN { exit !(a < b - 1) }' \
  || { echo "the first loss from the checkpoint ($init) is not the trained model's (fresh: $fresh)"; exit 1; }
# BF16 in shards of at most 500 KB (llama-tiny's 771,200 parameters: 1.5 MB).
"$zerodp" ckpt consolidate "$dir/ckpt" "$dir/out16" --hf-dtype bf16 --hf-max-shard-size 500KB > "$dir/c16.log"
[ -f "$dir/out16/hf/model.safetensors.index.json" ] || { echo "no index for the shards"; exit 1; }
"$zerodp" "${common[@]}" --init-from "$dir/out16/hf" --steps 2 > "$dir/init16.log"
grep -q 'initialised from .*(Hugging Face LlamaForCausalLM, BF16, [4-9] safetensors files)' "$dir/init16.log" \
  || { echo "the BF16 shards were not read as such"; exit 1; }
init16=$(first "$dir/init16.log")
awk -v a="$init16" -v b="$init" 'BEGIN { d = a - b; exit !(d < 0.05 && d > -0.05) }' \
  || { echo "the BF16 checkpoint's first loss $init16 is far from the F32 one's $init"; exit 1; }
rc=0
"$zerodp" "${common[@]}" --model gpt-tiny --init-from "$dir/out/hf" --steps 2 > "$dir/gpt.log" 2>&1 || rc=$?
[ "$rc" = 2 ] && grep -q 'is a Llama-family checkpoint' "$dir/gpt.log" \
  || { echo "a gpt --model with a Llama checkpoint gave exit $rc"; cat "$dir/gpt.log"; exit 1; }
echo "read back: first loss $init from the checkpoint ($init16 from its BF16 shards), $fresh fresh"
