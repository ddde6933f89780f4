// SPDX-License-Identifier: Apache-2.0
// Writes GPT-2's tokenizer as a Hugging Face tokenizer.json from its two
// files (encoder.json, vocab.bpe), the way Hugging Face's gpt2 repository
// spells it: a plain ByteLevel pre-tokenizer (GPT-2's regex, no prefix
// space), "a b" merges, <|endoftext|> an added special token, a ByteLevel
// decoder. The reference test runs zerodp and the reference on it. With
// --digits the pre-tokenizer is SmolLM2's: Digits (individual_digits), then
// that ByteLevel.
//   node gpt2_tokenizer_json.js GPT2_DIR OUT_JSON [--digits]
'use strict';
const fs = require('fs');
const path = require('path');

const [dir, out, option] = process.argv.slice(2);
if (!out) {
  console.error('usage: node gpt2_tokenizer_json.js GPT2_DIR OUT_JSON');
  process.exit(2);
}
const vocab = JSON.parse(fs.readFileSync(path.join(dir, 'encoder.json'), 'utf8'));
const merges = fs.readFileSync(path.join(dir, 'vocab.bpe'), 'utf8').split('\n').slice(1).filter((l) => l.length > 0);
const byteLevel = { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true };
fs.writeFileSync(out, JSON.stringify({
  version: '1.0',
  truncation: null,
  padding: null,
  added_tokens: [{ id: 50256, content: '<|endoftext|>', single_word: false, lstrip: false, rstrip: false,
                   normalized: true, special: true }],
  normalizer: null,
  pre_tokenizer: option === '--digits'
    ? { type: 'Sequence', pretokenizers: [{ type: 'Digits', individual_digits: true }, byteLevel] }
    : byteLevel,
  post_processor: byteLevel,
  decoder: byteLevel,
  model: { type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: '', end_of_word_suffix: '',
           fuse_unk: false, byte_fallback: false, vocab, merges },
}));
