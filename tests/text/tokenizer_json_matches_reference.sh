#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `zerodp tokenize --tokenizer tokenizer.json` against the reference: npm's
# @lenml/tokenizers (a JavaScript port of Hugging Face's tokenizers), run by
# node on the same tokenizer.json, must give exactly the same ids
# (reference_encode_hf.js compares them). NAME is llama3, qwen3 or gpt4o (the files
# scripts/install-hf-tokenizers puts in BUILD_DIR/share/zerodp/NAME), gpt2
# (GPT-2's files written as a tokenizer.json by gpt2_tokenizer_json.js) or
# gpt2_digits (the same with SmolLM2's pre-tokenizer: Digits, then ByteLevel).
# TEXT is a file, or a directory whose text files (sorted; not fortune's .dat
# indexes) are concatenated, e.g. Debian's fortunes. Without node, the
# packages, the files or the text, it fails and says to run scripts/setup
# (which installs them all), never skips.
#   usage: tokenizer_json_matches_reference.sh ZERODP BUILD_DIR NAME TEXT
set -euo pipefail
zerodp=$1 build=$2 name=$3 text=$4
here=$(cd "$(dirname "$0")" && pwd)
lib=$build/npm/node_modules/@lenml/tokenizers
fail() {
  echo "FAIL: $*"
  exit 1
}
command -v node > /dev/null || fail "node is missing: run scripts/setup (it installs Debian's nodejs)"
[ -f "$lib/dist/main.js" ] || fail "the reference $lib is missing: run scripts/setup (scripts/install-hf-tokenizers)"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
if [ "$name" = gpt2 ] || [ "$name" = gpt2_digits ]; then
  [ -f "$build/share/zerodp/gpt2/encoder.json" ] ||
    fail "GPT-2's files are missing from $build/share/zerodp/gpt2: run scripts/setup (scripts/install-gpt2-tokenizer)"
  json=$dir/gpt2/tokenizer.json
  mkdir -p "$dir/gpt2"
  option=()
  [ "$name" = gpt2_digits ] && option=(--digits)
  node "$here/gpt2_tokenizer_json.js" "$build/share/zerodp/gpt2" "$json" "${option[@]}"
else
  json=$build/share/zerodp/$name/tokenizer.json
  [ -f "$json" ] || fail "$json is missing: run scripts/setup (scripts/install-hf-tokenizers)"
fi
if [ -d "$text" ]; then
  files=()
  while IFS= read -r f; do files+=("$f"); done < <(find "$text" -maxdepth 1 -type f ! -name '*.dat' | LC_ALL=C sort)
  [ ${#files[@]} -gt 0 ] || fail "no text files in $text: run scripts/setup (it installs Debian's fortunes)"
  cat "${files[@]}" > "$dir/input.txt"
  echo "$text: ${#files[@]} files, $(wc -c < "$dir/input.txt") bytes"
else
  [ -f "$text" ] || fail "$text does not exist"
  cp "$text" "$dir/input.txt"
fi
"$zerodp" tokenize "$dir/input.txt" "$dir/out.bin" --tokenizer "$json"
node "$here/reference_encode_hf.js" "$lib" "$json" "$dir/input.txt" "$dir/out.bin" 2>&1 | tail -c 4000
exit "${PIPESTATUS[0]}"
