// SPDX-License-Identifier: Apache-2.0
// The independent check of zerodp's tokenizer.json reader: encodes a text
// file with a reference JavaScript implementation of Hugging Face's
// tokenizers (npm @lenml/tokenizers, a port of transformers.js) loaded with
// the same tokenizer.json, into documents the way `zerodp tokenize` makes
// them (each after the document token, <|begin_of_text|> where the
// tokenizer has one, else <|endoftext|>; a blank line "\n\n" ends one), and
// compares every id with the shard zerodp wrote (uint16 or uint32 ids).
// Also checks that decoding the reference's ids gives the text back.
//   node reference_encode_hf.js LENML_TOKENIZERS_DIR TOKENIZER_JSON TEXT_FILE SHARD_FILE
// tokenizer_config.json beside the tokenizer.json is read when present.
// Exit 0 and "N tokens identical" when equal; exit 1 naming the first
// difference otherwise.
'use strict';
const fs = require('fs');
const path = require('path');

const [libDir, jsonPath, textPath, shardPath] = process.argv.slice(2);
if (!shardPath) {
  console.error('usage: node reference_encode_hf.js LENML_TOKENIZERS_DIR TOKENIZER_JSON TEXT_FILE SHARD_FILE');
  process.exit(2);
}
const { TokenizerLoader } = require(path.resolve(libDir));
const tokenizerJSON = JSON.parse(fs.readFileSync(jsonPath, 'utf8'));
const configPath = path.join(path.dirname(jsonPath), 'tokenizer_config.json');
const tokenizerConfig = fs.existsSync(configPath) ? JSON.parse(fs.readFileSync(configPath, 'utf8')) : {};
const tokenizer = TokenizerLoader.fromPreTrained({ tokenizerJSON, tokenizerConfig });
const encode = (s) => tokenizer.encode(s, { add_special_tokens: false });
const decode = (ids) => tokenizer.decode(ids, { clean_up_tokenization_spaces: false });
// What decoding gives back: the text, normalized as the tokenizer does.
const nfc = tokenizerJSON.normalizer && tokenizerJSON.normalizer.type === 'NFC';
const normalized = (s) => (nfc ? s.normalize('NFC') : s);

const idOf = (content) => {
  for (const a of tokenizerJSON.added_tokens || []) if (a.content === content) return a.id;
  const v = tokenizerJSON.model.vocab[content];
  return v === undefined ? -1 : v;
};
const documentToken = idOf('<|begin_of_text|>') >= 0 ? idOf('<|begin_of_text|>') : idOf('<|endoftext|>');
if (documentToken < 0) {
  console.error(`${jsonPath}: neither <|begin_of_text|> nor <|endoftext|>`);
  process.exit(1);
}

const text = fs.readFileSync(textPath, 'utf8');
const ref = [];
let documents = 0;
for (let at = 0; ; ) {
  const blank = text.indexOf('\n\n', at);
  const end = blank < 0 ? text.length : blank + 2;
  ref.push(documentToken);
  documents++;
  const piece = text.slice(at, end);
  const ids = piece.length > 0 ? encode(piece) : [];
  if (ids.length > 0 && decode(ids) !== normalized(piece)) {
    console.error(`${textPath}: the reference does not decode its own ids back to document ${documents}`);
    process.exit(1);
  }
  for (const id of ids) ref.push(id);
  if (blank < 0) break;
  at = end;
}

const shard = fs.readFileSync(shardPath);
const fail = (why) => {
  console.error(`${shardPath}: ${why}`);
  process.exit(1);
};
if (shard.length < 1024) fail('shorter than the 256-int32 header');
const [magic, version, count] = [0, 1, 2].map((i) => shard.readInt32LE(4 * i));
const wide = magic === 20240801 && version === 7;
if (!wide && !(magic === 20240520 && version === 1)) fail(`magic ${magic} version ${version}`);
const width = wide ? 4 : 2;
if (shard.length !== 1024 + width * count) fail(`${shard.length} bytes for ${count} tokens`);
const got = [];
for (let i = 0; i < count; i++) got.push(wide ? shard.readUInt32LE(1024 + 4 * i) : shard.readUInt16LE(1024 + 2 * i));

const n = Math.min(ref.length, got.length);
let first = -1;
for (let i = 0; i < n && first < 0; i++) if (ref[i] !== got[i]) first = i;
if (first < 0 && ref.length !== got.length) first = n;
if (first >= 0) {
  const from = Math.max(0, first - 5);
  const show = (ids) => JSON.stringify(ids.slice(from, first + 6));
  const context = JSON.stringify(decode(ref.slice(from, first + 6)));
  fail(`differs from @lenml/tokenizers at token ${first} of ${ref.length} (zerodp ${got.length} tokens):\n` +
       `  reference [${from}..]: ${show(ref)}\n  zerodp    [${from}..]: ${show(got)}\n  text around it: ${context}`);
}
console.log(`${textPath}: ${ref.length} tokens identical to @lenml/tokenizers' encode of ${jsonPath} ` +
            `(${documents} documents, ${text.length} UTF-16 units)`);
